// Functionalized random ops: aotgrad.philox_rand / philox_randn / philox_dropout_mask take the
// generator state as explicit arguments (seed and offset as i64 scalar tensors, graph inputs
// fw_rng_seed() / fw_rng_offset(N), and `rel`, the op's own offset in blocks from the call's
// start), so a node's result is a pure function of its arguments: the partitioner may replay it
// in the backward with identical bits (Recompute::pointwise), and CSE must still not merge two
// of them (different `rel`, different draws). The tracer rewrites the eager random rows into
// these (trace/random.cpp); their kernels are the eager rows' kernels at (seed, offset + rel).
//
// Also the random ops composed from rand / randn (rand_like, bernoulli, randint, normal,
// uniform_, ...): being made of rand / randn rows and pointwise ops, they trace into philox nodes
// too, and eager and compiled calls draw the same numbers.
#include "aotgrad/random.h"

#include <stdexcept>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "kernels/factory.h"
#include "kernels/random.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/random_rows.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

// (seed, offset + rel) from a philox row's first three arguments.
struct PhiloxAt {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

void check_state_tensor(std::string_view op, const OpArgs& a, size_t i, const char* what) {
  const Tensor& t = tensor_arg(a, i);
  if (t.dtype() != DType::i64 || t.dim() != 0)
    fail(op, std::string(what) + " must be a 0-dim i64 tensor, got " +
                 std::string(dtype_name(t.dtype())) + shape_to_string(t.sizes()));
}

void check_philox_args(std::string_view op, const OpArgs& a) {
  check_state_tensor(op, a, 0, "seed");
  check_state_tensor(op, a, 1, "offset");
  if (int_arg(a, 2) < 0) fail(op, "rel must be >= 0, got " + std::to_string(int_arg(a, 2)));
  for (int64_t s : int_list_arg(a, 3))
    if (s < 0) fail(op, "argument 'size' " + shape_to_string(int_list_arg(a, 3)) + " is negative");
}

PhiloxAt philox_at(const OpArgs& a) {
  return {static_cast<uint64_t>(tensor_arg(a, 0).item<int64_t>()),
          static_cast<uint64_t>(tensor_arg(a, 1).item<int64_t>()) +
              static_cast<uint64_t>(int_arg(a, 2))};
}

std::vector<TensorMeta> philox_fill_meta(std::string_view op, const OpArgs& a) {
  check_philox_args(op, a);
  DType dtype = dtype_arg(a, 4);
  if (!is_floating(dtype))
    fail(op, "dtype " + std::string(dtype_name(dtype)) +
                 " is not supported; random values are "
                 "floating (f32, f64, f16 or bf16)");
  return {TensorMeta::contiguous(int_list_arg(a, 3), dtype)};
}

std::vector<TensorMeta> philox_rand_meta(const OpArgs& a) {
  return philox_fill_meta("aotgrad.philox_rand.default", a);
}
std::vector<TensorMeta> philox_randn_meta(const OpArgs& a) {
  return philox_fill_meta("aotgrad.philox_randn.default", a);
}
std::vector<Tensor> philox_rand_kernel(const OpArgs& a) {
  TensorMeta m = philox_rand_meta(a)[0];
  Tensor out = make_tensor(m.sizes, m.dtype);
  PhiloxAt at = philox_at(a);
  kernels::uniform(out, at.seed, at.offset);
  return {out};
}
std::vector<Tensor> philox_randn_kernel(const OpArgs& a) {
  TensorMeta m = philox_randn_meta(a)[0];
  Tensor out = make_tensor(m.sizes, m.dtype);
  PhiloxAt at = philox_at(a);
  kernels::normal(out, at.seed, at.offset);
  return {out};
}

std::vector<TensorMeta> philox_dropout_mask_meta(const OpArgs& a) {
  constexpr std::string_view op = "aotgrad.philox_dropout_mask.default";
  check_philox_args(op, a);
  double p = float_arg(a, 4);
  if (!(p >= 0.0 && p <= 1.0))
    fail(op, "dropout probability has to be between 0 and 1, but got " + std::to_string(p));
  return {TensorMeta::contiguous(int_list_arg(a, 3), DType::b8)};
}
std::vector<Tensor> philox_dropout_mask_kernel(const OpArgs& a) {
  TensorMeta m = philox_dropout_mask_meta(a)[0];
  PhiloxAt at = philox_at(a);
  return {kernels::dropout_mask(m.sizes, 1.0 - float_arg(a, 4), at.seed, at.offset)};
}

// ---- eager random rows built on rand / randn ----
// Each kernel runs its decomposition eagerly (under no_grad: draws never require grad); the
// tracer runs the same decomposition instead of recording the row (trace/random.cpp).

void check_floating_arg(std::string_view op, const Tensor& t, const char* what) {
  if (!is_floating(t.dtype()))
    fail(op, std::string(what) + " must be a floating tensor, got " +
                 std::string(dtype_name(t.dtype())));
}
void check_p(std::string_view op, double p) {
  if (!(p >= 0.0 && p <= 1.0)) fail(op, "p must be in [0, 1], got " + std::to_string(p));
}
void check_no_generator(std::string_view op, const OpArgs& a, size_t i) {
  if (!is_none(a, i))
    fail(op,
         "an explicit generator cannot be passed through the op table; seed the default "
         "generator with manual_seed() instead");
}
DType like_dtype(std::string_view op, const OpArgs& a) {
  DType d = is_none(a, 1) ? tensor_arg(a, 0).dtype() : dtype_arg(a, 1);
  if (!is_floating(d)) fail(op, "dtype " + std::string(dtype_name(d)) + " is not floating");
  return d;
}

constexpr std::string_view kBernoulli = "aten.bernoulli.default";
constexpr std::string_view kBernoulliP = "aten.bernoulli.p";
constexpr std::string_view kBernoulliFloat_ = "aten.bernoulli_.float";
constexpr std::string_view kBernoulliTensor_ = "aten.bernoulli_.Tensor";
constexpr std::string_view kRandLike = "aten.rand_like.default";
constexpr std::string_view kRandnLike = "aten.randn_like.default";
constexpr std::string_view kRandintLow = "aten.randint.low";
constexpr std::string_view kNormal = "aten.normal.float_float";
constexpr std::string_view kUniform_ = "aten.uniform_.default";

// u < p with u uniform on [0, 1), as a 0/1 tensor of `dtype`.
Tensor draws_below(const IntList& sizes, DType dtype, const Arg& p) {
  Tensor u = rand(sizes, dtype);
  Tensor keep = std::holds_alternative<Tensor>(p) ? lt(u, detach(std::get<Tensor>(p)))
                                                  : lt(u, Scalar(std::get<double>(p)));
  return to(keep, dtype);
}

std::vector<Tensor> bernoulli_decomp(const OpArgs& a) {
  const Tensor& p = tensor_arg(a, 0);
  return {draws_below(p.sizes(), p.dtype(), p)};
}
std::vector<Tensor> bernoulli_p_decomp(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {draws_below(self.sizes(), self.dtype(), a[1])};
}
std::vector<Tensor> bernoulli__decomp(const OpArgs& a) {
  Tensor self = tensor_arg(a, 0);
  Tensor draws = draws_below(self.sizes(), self.dtype(), a[1]);
  copy_(self, draws);
  return {self};
}
std::vector<Tensor> rand_like_decomp(const OpArgs& a) {
  return {rand(tensor_arg(a, 0).sizes(), like_dtype(kRandLike, a))};
}
std::vector<Tensor> randn_like_decomp(const OpArgs& a) {
  return {randn(tensor_arg(a, 0).sizes(), like_dtype(kRandnLike, a))};
}
// floor(u * (high - low)) + low, u uniform on [0, 1) in f64.
std::vector<Tensor> randint_decomp(const OpArgs& a) {
  const int64_t low = int_arg(a, 0), high = int_arg(a, 1);
  Tensor u = rand(int_list_arg(a, 2), DType::f64);
  Tensor k = to(mul(u, Scalar(static_cast<double>(high - low))), DType::i64);
  return {to(add(k, Scalar(low)), is_none(a, 3) ? DType::i64 : dtype_arg(a, 3))};
}
std::vector<Tensor> normal_decomp(const OpArgs& a) {
  DType dtype = is_none(a, 4) ? kDefaultFloat : dtype_arg(a, 4);
  return {
      add(mul(randn(int_list_arg(a, 2), dtype), Scalar(float_arg(a, 1))), Scalar(float_arg(a, 0)))};
}
std::vector<Tensor> uniform__decomp(const OpArgs& a) {
  Tensor self = tensor_arg(a, 0);
  const double from = float_arg(a, 1), to_value = float_arg(a, 2);
  Tensor u = rand(self.sizes(), self.dtype());
  copy_(self, add(mul(u, Scalar(to_value - from)), Scalar(from)));
  return {self};
}

std::vector<TensorMeta> same_as_self_meta(std::string_view op, const OpArgs& a, size_t gen) {
  check_floating_arg(op, tensor_arg(a, 0), "self");
  check_no_generator(op, a, gen);
  return {TensorMeta::contiguous(tensor_arg(a, 0).sizes(), tensor_arg(a, 0).dtype())};
}
std::vector<TensorMeta> bernoulli_meta(const OpArgs& a) {
  return same_as_self_meta(kBernoulli, a, 1);
}
std::vector<TensorMeta> bernoulli_p_meta(const OpArgs& a) {
  check_p(kBernoulliP, float_arg(a, 1));
  return same_as_self_meta(kBernoulliP, a, 2);
}
// In-place rows: the result is self itself (its own geometry).
std::vector<TensorMeta> inplace_self_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta{self.dtype(), self.sizes(), self.strides(), self.storage_offset()}};
}
std::vector<TensorMeta> bernoulli_float__meta(const OpArgs& a) {
  check_floating_arg(kBernoulliFloat_, tensor_arg(a, 0), "self");
  check_p(kBernoulliFloat_, float_arg(a, 1));
  check_no_generator(kBernoulliFloat_, a, 2);
  return inplace_self_meta(a);
}
std::vector<TensorMeta> bernoulli_tensor__meta(const OpArgs& a) {
  check_floating_arg(kBernoulliTensor_, tensor_arg(a, 0), "self");
  check_floating_arg(kBernoulliTensor_, tensor_arg(a, 1), "p");
  check_no_generator(kBernoulliTensor_, a, 2);
  const IntList& self = tensor_arg(a, 0).sizes();
  const IntList& p = tensor_arg(a, 1).sizes();
  bool fits = p.size() <= self.size();
  for (size_t k = 1; fits && k <= p.size(); ++k)
    fits = p[p.size() - k] == 1 || p[p.size() - k] == self[self.size() - k];
  if (!fits)
    fail(kBernoulliTensor_, "p " + shape_to_string(tensor_arg(a, 1).sizes()) +
                                " does not broadcast to self " +
                                shape_to_string(tensor_arg(a, 0).sizes()));
  return inplace_self_meta(a);
}
std::vector<TensorMeta> rand_like_meta(const OpArgs& a) {
  return {TensorMeta::contiguous(tensor_arg(a, 0).sizes(), like_dtype(kRandLike, a))};
}
std::vector<TensorMeta> randn_like_meta(const OpArgs& a) {
  return {TensorMeta::contiguous(tensor_arg(a, 0).sizes(), like_dtype(kRandnLike, a))};
}
std::vector<TensorMeta> randint_meta(const OpArgs& a) {
  if (int_arg(a, 1) <= int_arg(a, 0))
    fail(kRandintLow, "expected low < high, got low=" + std::to_string(int_arg(a, 0)) +
                          ", high=" + std::to_string(int_arg(a, 1)));
  for (int64_t s : int_list_arg(a, 2))
    if (s < 0) fail(kRandintLow, "size " + shape_to_string(int_list_arg(a, 2)) + " is negative");
  return {TensorMeta::contiguous(int_list_arg(a, 2), is_none(a, 3) ? DType::i64 : dtype_arg(a, 3))};
}
std::vector<TensorMeta> normal_meta(const OpArgs& a) {
  if (!(float_arg(a, 1) >= 0.0))
    fail(kNormal, "expected std >= 0.0, got " + std::to_string(float_arg(a, 1)));
  check_no_generator(kNormal, a, 3);
  DType dtype = is_none(a, 4) ? kDefaultFloat : dtype_arg(a, 4);
  if (!is_floating(dtype))
    fail(kNormal, "dtype " + std::string(dtype_name(dtype)) + " is not floating");
  for (int64_t s : int_list_arg(a, 2))
    if (s < 0) fail(kNormal, "size " + shape_to_string(int_list_arg(a, 2)) + " is negative");
  return {TensorMeta::contiguous(int_list_arg(a, 2), dtype)};
}
std::vector<TensorMeta> uniform__meta(const OpArgs& a) {
  check_floating_arg(kUniform_, tensor_arg(a, 0), "self");
  if (!(float_arg(a, 1) <= float_arg(a, 2)))
    fail(kUniform_,
         "expects to return a [from, to) range, but found from=" + std::to_string(float_arg(a, 1)) +
             " > to=" + std::to_string(float_arg(a, 2)));
  check_no_generator(kUniform_, a, 3);
  return inplace_self_meta(a);
}

// The eager kernel of a decomposed row: its meta's checks, then the decomposition without
// autograd (a draw is a constant to autograd; PyTorch's rows have no derivative either).
template <auto Meta, auto Decomp>
std::vector<Tensor> decomposed_kernel(const OpArgs& a) {
  Meta(a);
  NoGradGuard no_grad;
  return Decomp(a);
}

struct DecomposedRow {
  std::string_view name;
  RandomDecomposition decomposition;
};
const DecomposedRow kDecomposed[] = {
    {kBernoulli, bernoulli_decomp},        {kBernoulliP, bernoulli_p_decomp},
    {kBernoulliFloat_, bernoulli__decomp}, {kBernoulliTensor_, bernoulli__decomp},
    {kRandLike, rand_like_decomp},         {kRandnLike, randn_like_decomp},
    {kRandintLow, randint_decomp},         {kNormal, normal_decomp},
    {kUniform_, uniform__decomp},
};

const OpDef kRows[] = {
    {.name = "aotgrad.philox_rand.default",
     .schema = "philox_rand(Tensor seed, Tensor offset, int rel, SymInt[] size, ScalarType dtype) "
               "-> Tensor",
     .meta = philox_rand_meta,
     .kernel = philox_rand_kernel,
     .recompute = Recompute::pointwise},
    {.name = "aotgrad.philox_randn.default",
     .schema = "philox_randn(Tensor seed, Tensor offset, int rel, SymInt[] size, ScalarType "
               "dtype) -> Tensor",
     .meta = philox_randn_meta,
     .kernel = philox_randn_kernel,
     .recompute = Recompute::pointwise},
    {.name = "aotgrad.philox_dropout_mask.default",
     .schema = "philox_dropout_mask(Tensor seed, Tensor offset, int rel, SymInt[] size, float p) "
               "-> Tensor",
     .meta = philox_dropout_mask_meta,
     .kernel = philox_dropout_mask_kernel,
     .recompute = Recompute::pointwise},
    {.name = kBernoulli,
     .schema = "bernoulli(Tensor self, *, Generator? generator=None) -> Tensor",
     .meta = bernoulli_meta,
     .kernel = decomposed_kernel<bernoulli_meta, bernoulli_decomp>,
     .recompute = Recompute::random},
    {.name = kBernoulliP,
     .schema = "bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor",
     .meta = bernoulli_p_meta,
     .kernel = decomposed_kernel<bernoulli_p_meta, bernoulli_p_decomp>,
     .recompute = Recompute::random},
    {.name = kBernoulliFloat_,
     .schema = "bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> "
               "Tensor(a!)",
     .meta = bernoulli_float__meta,
     .kernel = decomposed_kernel<bernoulli_float__meta, bernoulli__decomp>,
     .recompute = Recompute::random},
    {.name = kBernoulliTensor_,
     .schema = "bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> "
               "Tensor(a!)",
     .meta = bernoulli_tensor__meta,
     .kernel = decomposed_kernel<bernoulli_tensor__meta, bernoulli__decomp>,
     .recompute = Recompute::random},
    {.name = kRandLike,
     .schema = "rand_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
               "device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
     .meta = rand_like_meta,
     .kernel = decomposed_kernel<rand_like_meta, rand_like_decomp>,
     .recompute = Recompute::random},
    {.name = kRandnLike,
     .schema = "randn_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? "
               "device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
     .meta = randn_like_meta,
     .kernel = decomposed_kernel<randn_like_meta, randn_like_decomp>,
     .recompute = Recompute::random},
    {.name = kRandintLow,
     .schema = "randint.low(SymInt low, SymInt high, SymInt[] size, *, ScalarType? dtype=None, "
               "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
     .meta = randint_meta,
     .kernel = decomposed_kernel<randint_meta, randint_decomp>,
     .recompute = Recompute::random},
    {.name = kNormal,
     .schema = "normal.float_float(float mean, float std, SymInt[] size, *, Generator? "
               "generator=None, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
               "bool? pin_memory=None) -> Tensor",
     .meta = normal_meta,
     .kernel = decomposed_kernel<normal_meta, normal_decomp>,
     .recompute = Recompute::random},
    {.name = kUniform_,
     .schema = "uniform_(Tensor(a!) self, float from=0, float to=1, *, Generator? generator=None) "
               "-> Tensor(a!)",
     .meta = uniform__meta,
     .kernel = decomposed_kernel<uniform__meta, uniform__decomp>,
     .recompute = Recompute::random},
};

}  // namespace

std::span<const OpDef> random_ops() {
  return kRows;
}

RandomDecomposition random_decomposition(const OpDef& op) {
  for (const DecomposedRow& r : kDecomposed)
    if (r.name == op.name) return r.decomposition;
  return nullptr;
}

}  // namespace aotgrad::ops

namespace aotgrad {

GeneratorState get_rng_state() {
  return default_generator().get_state();
}
void set_rng_state(const GeneratorState& state) {
  default_generator().set_state(state);
}

Tensor rand_like(const Tensor& like) {
  static const ops::OpDef& def = ops::lookup(ops::kRandLike);
  return ops::call1(def, {like});
}

Tensor randn_like(const Tensor& like) {
  static const ops::OpDef& def = ops::lookup(ops::kRandnLike);
  return ops::call1(def, {like});
}

Tensor bernoulli(const Tensor& p) {
  static const ops::OpDef& def = ops::lookup(ops::kBernoulli);
  return ops::call1(def, {p});
}

Tensor bernoulli(const Tensor& self, double p) {
  static const ops::OpDef& def = ops::lookup(ops::kBernoulliP);
  return ops::call1(def, {self, p});
}

Tensor& bernoulli_(Tensor& self, double p) {
  static const ops::OpDef& def = ops::lookup(ops::kBernoulliFloat_);
  ops::call1(def, {self, p});
  return self;
}

Tensor& bernoulli_(Tensor& self, const Tensor& p) {
  static const ops::OpDef& def = ops::lookup(ops::kBernoulliTensor_);
  ops::call1(def, {self, p});
  return self;
}

Tensor randint(int64_t low, int64_t high, const IntList& sizes, DType dtype) {
  static const ops::OpDef& def = ops::lookup(ops::kRandintLow);
  return ops::call1(def, {low, high, sizes, dtype});
}

Tensor normal(double mean, double std, const IntList& sizes, DType dtype) {
  static const ops::OpDef& def = ops::lookup(ops::kNormal);
  return ops::call1(def, {mean, std, sizes, std::monostate{}, dtype});
}

Tensor& uniform_(Tensor& self, double from, double to_value) {
  static const ops::OpDef& def = ops::lookup(ops::kUniform_);
  ops::call1(def, {self, from, to_value});
  return self;
}

}  // namespace aotgrad
