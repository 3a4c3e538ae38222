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

#include "aotgrad/ops.h"
#include "kernels/factory.h"
#include "kernels/random.h"
#include "ops/families.h"
#include "ops/op.h"
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
};

}  // namespace

std::span<const OpDef> random_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

namespace {
void check_floating(const char* op, const Tensor& t) {
  if (!is_floating(t.dtype()))
    throw std::invalid_argument(std::string(op) + ": expected a floating tensor, got " +
                                std::string(dtype_name(t.dtype())));
}
void check_probability(const char* op, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument(std::string(op) + ": p must be in [0, 1], got " +
                                std::to_string(p));
}
}  // namespace

GeneratorState get_rng_state() {
  return default_generator().get_state();
}
void set_rng_state(const GeneratorState& state) {
  default_generator().set_state(state);
}

Tensor rand_like(const Tensor& like) {
  check_floating("rand_like", like);
  return rand(like.sizes(), like.dtype());
}

Tensor randn_like(const Tensor& like) {
  check_floating("randn_like", like);
  return randn(like.sizes(), like.dtype());
}

// u < p with u uniform on [0, 1): 1 with probability p. Computed on detached values, so the
// result never requires grad (PyTorch's bernoulli has no gradient either).
Tensor bernoulli(const Tensor& p) {
  check_floating("bernoulli", p);
  return to(lt(rand_like(p), detach(p)), p.dtype());
}

Tensor bernoulli(const Tensor& self, double p) {
  check_floating("bernoulli", self);
  check_probability("bernoulli", p);
  return to(lt(rand_like(self), p), self.dtype());
}

Tensor& bernoulli_(Tensor& self, double p) {
  Tensor draws = bernoulli(self, p);
  return copy_(self, draws);
}

Tensor& bernoulli_(Tensor& self, const Tensor& p) {
  check_floating("bernoulli_", self);
  Tensor draws = to(lt(rand_like(self), detach(p)), self.dtype());
  return copy_(self, draws);
}

// floor(u * (high - low)) + low, u uniform on [0, 1) in f64: every integer of the range is
// equally likely up to f64 rounding.
Tensor randint(int64_t low, int64_t high, const IntList& sizes, DType dtype) {
  if (high <= low)
    throw std::invalid_argument("randint: expected low < high, got low=" + std::to_string(low) +
                                ", high=" + std::to_string(high));
  Tensor u = rand(sizes, DType::f64);
  Tensor k = to(mul(u, Scalar(static_cast<double>(high - low))), DType::i64);
  return to(add(k, Scalar(low)), dtype);
}

Tensor normal(double mean, double std, const IntList& sizes, DType dtype) {
  if (!(std >= 0.0))
    throw std::invalid_argument("normal: expected std >= 0.0, got " + std::to_string(std));
  return add(mul(randn(sizes, dtype), Scalar(std)), Scalar(mean));
}

Tensor& uniform_(Tensor& self, double from, double to_value) {
  check_floating("uniform_", self);
  if (!(from <= to_value))
    throw std::invalid_argument("uniform_: expects to return a [from, to) range, but found from=" +
                                std::to_string(from) + " > to=" + std::to_string(to_value));
  Tensor u = rand(self.sizes(), self.dtype());
  Tensor draws = add(mul(u, Scalar(to_value - from)), Scalar(from));
  return copy_(self, draws);
}

}  // namespace aotgrad
