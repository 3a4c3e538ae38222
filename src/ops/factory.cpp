// Copies, casts and factories: clone, _to_copy, copy, fill, the *_like ops, empty / zeros /
// ones / full, arange, rand / randn.
//
// Reading guide: every result here is a fresh contiguous tensor. That is a deliberate difference
// from ATen, whose clone / *_like default to preserve_format (keeping a permuted input's
// strides): in aotgrad every compute op returns contiguous outputs, so graph metadata never
// depends on input layout and kernels may assume what they allocate is dense. Each kernel starts
// by calling its row's meta, so eager calls get the same validation as traced ones.
//
// Random numbers: rand/randn rows draw from the calling thread's default_generator() inside the
// kernel (Recompute::random: the partitioner never replays them). A Generator* cannot travel in
// OpArgs, so rand/randn with an explicit Generator fill eagerly, outside the op table; they refuse
// to run under a tracer, where the graph could not name the generator.
#include "kernels/factory.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "kernels/copy.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

std::string strip_torch_prefix(const std::string& s) {
  return s.rfind("torch.", 0) == 0 ? s.substr(6) : s;
}

// Checks the TensorOptions arguments aotgrad can honour: strided layout, CPU device.
void check_layout_device(std::string_view op, const OpArgs& a, size_t layout, size_t device) {
  if (!is_none(a, layout) && strip_torch_prefix(string_arg(a, layout)) != "strided")
    fail(op, "layout '" + string_arg(a, layout) + "' is not supported; only strided tensors exist");
  if (!is_none(a, device) && string_arg(a, device).find("cpu") == std::string::npos)
    fail(op, "device '" + string_arg(a, device) + "' is not supported; aotgrad runs on the CPU");
}

void check_memory_format(std::string_view op, const OpArgs& a, size_t i) {
  if (is_none(a, i)) return;
  std::string f = strip_torch_prefix(string_arg(a, i));
  if (f != "preserve_format" && f != "contiguous_format")
    fail(op, "memory_format '" + string_arg(a, i) +
                 "' is not supported; results are always contiguous (use contiguous_format)");
}

DType dtype_or(const OpArgs& a, size_t i, DType fallback) {
  return is_none(a, i) ? fallback : dtype_arg(a, i);
}

const IntList& size_arg(std::string_view op, const OpArgs& a, size_t i) {
  const IntList& sizes = int_list_arg(a, i);
  for (int64_t s : sizes)
    if (s < 0) fail(op, "argument 'size' " + shape_to_string(sizes) + " has a negative dimension");
  return sizes;
}

// ---- empty / zeros / ones / full: (size, [fill_value], *, dtype, layout, device, pin_memory) ----

// (size, *, dtype, layout, device, ...) factories; the dtype defaults to the default float.
TensorMeta sized_factory_meta(std::string_view op, const OpArgs& a) {
  check_layout_device(op, a, 2, 3);
  return TensorMeta::contiguous(size_arg(op, a, 0), dtype_or(a, 1, kDefaultFloat));
}

std::vector<TensorMeta> empty_meta(const OpArgs& a) {
  check_memory_format("aten.empty.memory_format", a, 5);
  return {sized_factory_meta("aten.empty.memory_format", a)};
}
std::vector<TensorMeta> zeros_meta(const OpArgs& a) {
  return {sized_factory_meta("aten.zeros.default", a)};
}
std::vector<TensorMeta> ones_meta(const OpArgs& a) {
  return {sized_factory_meta("aten.ones.default", a)};
}
// torch.full infers the dtype from the fill value when none is given.
std::vector<TensorMeta> full_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.full.default";
  check_layout_device(op, a, 3, 4);
  Scalar v = scalar_arg(a, 1);
  DType inferred = v.is_floating() ? kDefaultFloat : v.natural_dtype();
  return {TensorMeta::contiguous(size_arg(op, a, 0), dtype_or(a, 2, inferred))};
}

std::vector<Tensor> empty_kernel(const OpArgs& a) {
  TensorMeta m = empty_meta(a)[0];
  return {make_tensor(m.sizes, m.dtype)};
}
std::vector<Tensor> zeros_kernel(const OpArgs& a) {
  TensorMeta m = zeros_meta(a)[0];
  return {kernels::full(m.sizes, 0, m.dtype)};
}
std::vector<Tensor> ones_kernel(const OpArgs& a) {
  TensorMeta m = ones_meta(a)[0];
  return {kernels::full(m.sizes, 1, m.dtype)};
}
std::vector<Tensor> full_kernel(const OpArgs& a) {
  TensorMeta m = full_meta(a)[0];
  return {kernels::full(m.sizes, scalar_arg(a, 1), m.dtype)};
}

// ---- arange.start_step(start, end, step, *, dtype, layout, device, pin_memory) ----

struct ArangeGeometry {
  int64_t length;
  DType dtype;
};

ArangeGeometry arange_geometry(const OpArgs& a) {
  constexpr std::string_view op = "aten.arange.start_step";
  check_layout_device(op, a, 4, 5);
  Scalar start = scalar_arg(a, 0), end = scalar_arg(a, 1), step = scalar_arg(a, 2);
  bool integral = start.is_integral() && end.is_integral() && step.is_integral();
  DType dtype = dtype_or(a, 3, integral ? DType::i64 : kDefaultFloat);
  double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (st == 0) fail(op, "argument 'step' must be nonzero");
  if ((st > 0 && e < s) || (st < 0 && e > s))
    fail(op, "upper bound " + end.to_string() + " and lower bound " + start.to_string() +
                 " are inconsistent with the sign of step " + step.to_string());
  if (dtype == DType::i64) {
    // ATen counts integral ranges in integers: exact where doubles would round.
    int64_t si = start.to_int(), ei = end.to_int(), sti = step.to_int();
    if (sti == 0) fail(op, "argument 'step' " + step.to_string() + " truncates to 0 for dtype i64");
    // In 128 bits: end - start alone wraps for a range wider than int64 (arange(-2^62, 2^62)).
    const __int128 sign = sti > 0 ? 1 : -1;
    const __int128 n = (static_cast<__int128>(ei) - si + sti - sign) / sti;
    if (n > std::numeric_limits<int64_t>::max())
      fail(op, "the range from " + start.to_string() + " to " + end.to_string() + " by step " +
                   step.to_string() + " holds more than " +
                   std::to_string(std::numeric_limits<int64_t>::max()) +
                   " elements: the element count overflows int64; use a smaller range");
    return {std::max<int64_t>(static_cast<int64_t>(n), 0), dtype};
  }
  double n = std::ceil((e - s) / st);
  if (!(n < 9.0e18)) fail(op, "the range holds too many elements (" + std::to_string(n) + ")");
  return {static_cast<int64_t>(n), dtype};
}

std::vector<TensorMeta> arange_meta(const OpArgs& a) {
  ArangeGeometry g = arange_geometry(a);
  return {TensorMeta::contiguous({g.length}, g.dtype)};
}
std::vector<Tensor> arange_kernel(const OpArgs& a) {
  ArangeGeometry g = arange_geometry(a);
  return {kernels::arange(scalar_arg(a, 0), scalar_arg(a, 2), g.length, g.dtype)};
}

// arange.default(end, *, dtype, ...) is arange.start_step(0, end, 1, *, dtype, ...).
OpArgs arange_start_step_args(const OpArgs& a) {
  OpArgs full{Scalar(int64_t{0}), a.at(0), Scalar(int64_t{1})};
  full.insert(full.end(), a.begin() + 1, a.end());
  return full;
}
std::vector<TensorMeta> arange_end_meta(const OpArgs& a) {
  return arange_meta(arange_start_step_args(a));
}
std::vector<Tensor> arange_end_kernel(const OpArgs& a) {
  return arange_kernel(arange_start_step_args(a));
}

// ---- rand / randn(size, *, dtype, layout, device, pin_memory) ----

void check_random_dtype(std::string_view op, DType dtype) {
  if (!is_floating(dtype))
    fail(op, "dtype " + std::string(dtype_name(dtype)) +
                 " is not supported; random values are floating (f32, f64, f16 or bf16)");
}

std::vector<TensorMeta> rand_meta(const OpArgs& a) {
  TensorMeta m = sized_factory_meta("aten.rand.default", a);
  check_random_dtype("aten.rand.default", m.dtype);
  return {m};
}
std::vector<TensorMeta> randn_meta(const OpArgs& a) {
  TensorMeta m = sized_factory_meta("aten.randn.default", a);
  check_random_dtype("aten.randn.default", m.dtype);
  return {m};
}

// Reserves the draws of one fill of the fresh contiguous `out` from `gen` and makes them.
void fill_random(const Tensor& out, Generator& gen, bool gaussian) {
  int64_t blocks = kernels::random_blocks(out.dtype(), out.numel());
  uint64_t offset = gen.advance(4 * static_cast<uint64_t>(blocks));
  if (gaussian)
    kernels::normal(out, gen.seed(), offset);
  else
    kernels::uniform(out, gen.seed(), offset);
}

std::vector<Tensor> rand_kernel(const OpArgs& a) {
  TensorMeta m = rand_meta(a)[0];
  Tensor out = make_tensor(m.sizes, m.dtype);
  fill_random(out, default_generator(), /*gaussian=*/false);
  return {out};
}
std::vector<Tensor> randn_kernel(const OpArgs& a) {
  TensorMeta m = randn_meta(a)[0];
  Tensor out = make_tensor(m.sizes, m.dtype);
  fill_random(out, default_generator(), /*gaussian=*/true);
  return {out};
}

// ---- copies and casts ----

std::vector<TensorMeta> clone_meta(const OpArgs& a) {
  check_memory_format("aten.clone.default", a, 1);
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> clone_kernel(const OpArgs& a) {
  clone_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::contiguous_copy(self, self.dtype())};
}
std::vector<Tensor> clone_vjp(const VjpContext& c) {
  return {c.needs(0) ? c.grad() : Tensor()};
}

// _to_copy(self, *, dtype, layout, device, pin_memory, non_blocking, memory_format)
std::vector<TensorMeta> to_copy_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten._to_copy.default";
  check_layout_device(op, a, 2, 3);
  check_memory_format(op, a, 6);
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(self.sizes(), dtype_or(a, 1, self.dtype()))};
}
std::vector<Tensor> to_copy_kernel(const OpArgs& a) {
  TensorMeta m = to_copy_meta(a)[0];
  return {kernels::contiguous_copy(tensor_arg(a, 0), m.dtype)};
}
std::vector<Tensor> to_copy_vjp(const VjpContext& c) {
  return {c.needs(0) ? to(c.grad(), c.input(0).dtype()) : Tensor()};
}

// The gradient of a value that was broadcast and cast into a destination: summed back to its
// shape, in its dtype.
Tensor reduce_to_source(const Tensor& g, const Tensor& src) {
  Tensor r = g.sizes() == src.sizes() ? g : sum_to_size(g, src.sizes());
  return to(r, src.dtype());
}

// copy(self, src, non_blocking): what self.copy_(src) leaves in self, as a new tensor.
std::vector<TensorMeta> copy_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& src = tensor_arg(a, 1);
  bool fits = src.dim() <= self.dim();
  for (int64_t i = 0; fits && i < src.dim(); ++i) {
    int64_t s = src.sizes()[i], d = self.sizes()[self.dim() - src.dim() + i];
    fits = s == 1 || s == d;
  }
  if (!fits)
    fail("aten.copy.default", "argument 'src' of shape " + shape_to_string(src.sizes()) +
                                  " does not broadcast to self's shape " +
                                  shape_to_string(self.sizes()));
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> copy_kernel(const OpArgs& a) {
  TensorMeta m = copy_meta(a)[0];
  Tensor out = make_tensor(m.sizes, m.dtype);
  kernels::copy_into(out, tensor_arg(a, 1));
  return {out};
}
// self's values are overwritten: zeros, as derivatives.yaml's `self: zeros_like(grad)` (copy_'s,
// fill's, zero_'s): defined, so everything that made self still runs in the backward.
std::vector<Tensor> copy_vjp(const VjpContext& c) {
  return {c.needs(0) ? zeros_like(c.grad()) : Tensor(),
          c.needs(1) ? reduce_to_source(c.grad(), c.input(1)) : Tensor()};
}

// fill.Scalar(self, value): self's shape and dtype, every element `value`. Differentiable with a
// zero gradient, so a filled tensor keeps requiring grad exactly like self.fill_(value) does.
std::vector<TensorMeta> fill_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> fill_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::full(self.sizes(), scalar_arg(a, 1), self.dtype())};
}
// zero(self): zero_'s functional variant (PyTorch's aten.zero), fill.Scalar with 0. Not
// zeros_like, a factory without a VJP: a zeroed tensor keeps requiring grad, as self.zero_() does.
std::vector<Tensor> zero_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::full(self.sizes(), Scalar(0), self.dtype())};
}

// fill.Tensor(self, value): fill.Scalar with a 0-dim tensor value, which gets the gradient (the sum
// of the incoming one, as derivatives.yaml); self gets zeros.
std::vector<TensorMeta> fill_tensor_meta(const OpArgs& a) {
  const Tensor& value = tensor_arg(a, 1);
  if (value.dim() != 0)
    fail("aten.fill.Tensor", "value must be a 0-dimensional tensor, got one of shape " +
                                 shape_to_string(value.sizes()) +
                                 "; pass value.squeeze() or a number");
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> fill_tensor_kernel(const OpArgs& a) {
  TensorMeta m = fill_tensor_meta(a)[0];
  const Tensor& value = tensor_arg(a, 1);
  Tensor out = make_tensor(m.sizes, m.dtype);
  kernels::copy_into(out, value);  // a 0-dim source broadcasts to every element, cast as it goes
  return {out};
}
std::vector<Tensor> fill_tensor_vjp(const VjpContext& c) {
  return {c.needs(0) ? zeros_like(c.grad()) : Tensor(),
          c.needs(1) ? to(sum(c.grad()), c.input(1).dtype()) : Tensor()};
}

// ---- new_zeros / new_ones / new_empty / new_full(self, size, [fill_value], *, dtype, layout,
// device, pin_memory): a fresh tensor of `size` in self's dtype unless one is given. self lends
// only its dtype: no gradient flows to it. ----

TensorMeta new_sized_meta(std::string_view op, const OpArgs& a, size_t dtype_index) {
  check_layout_device(op, a, dtype_index + 1, dtype_index + 2);
  return TensorMeta::contiguous(size_arg(op, a, 1),
                                dtype_or(a, dtype_index, tensor_arg(a, 0).dtype()));
}
std::vector<TensorMeta> new_zeros_meta(const OpArgs& a) {
  return {new_sized_meta("aten.new_zeros.default", a, 2)};
}
std::vector<TensorMeta> new_ones_meta(const OpArgs& a) {
  return {new_sized_meta("aten.new_ones.default", a, 2)};
}
std::vector<TensorMeta> new_empty_meta(const OpArgs& a) {
  return {new_sized_meta("aten.new_empty.default", a, 2)};
}
std::vector<TensorMeta> new_full_meta(const OpArgs& a) {
  return {new_sized_meta("aten.new_full.default", a, 3)};
}
std::vector<Tensor> new_zeros_kernel(const OpArgs& a) {
  TensorMeta m = new_zeros_meta(a)[0];
  return {kernels::full(m.sizes, 0, m.dtype)};
}
std::vector<Tensor> new_ones_kernel(const OpArgs& a) {
  TensorMeta m = new_ones_meta(a)[0];
  return {kernels::full(m.sizes, 1, m.dtype)};
}
std::vector<Tensor> new_empty_kernel(const OpArgs& a) {
  TensorMeta m = new_empty_meta(a)[0];
  return {make_tensor(m.sizes, m.dtype)};
}
std::vector<Tensor> new_full_kernel(const OpArgs& a) {
  TensorMeta m = new_full_meta(a)[0];
  return {kernels::full(m.sizes, scalar_arg(a, 2), m.dtype)};
}

// ---- *_like(self, [fill_value], *, dtype, layout, device, pin_memory, memory_format) ----

// `dtype_index` is where the keyword options start (after the fill value, if any).
TensorMeta like_meta(std::string_view op, const OpArgs& a, size_t dtype_index) {
  check_layout_device(op, a, dtype_index + 1, dtype_index + 2);
  check_memory_format(op, a, dtype_index + 4);
  const Tensor& self = tensor_arg(a, 0);
  return TensorMeta::contiguous(self.sizes(), dtype_or(a, dtype_index, self.dtype()));
}

std::vector<TensorMeta> zeros_like_meta(const OpArgs& a) {
  return {like_meta("aten.zeros_like.default", a, 1)};
}
std::vector<TensorMeta> ones_like_meta(const OpArgs& a) {
  return {like_meta("aten.ones_like.default", a, 1)};
}
std::vector<TensorMeta> empty_like_meta(const OpArgs& a) {
  return {like_meta("aten.empty_like.default", a, 1)};
}
std::vector<TensorMeta> full_like_meta(const OpArgs& a) {
  return {like_meta("aten.full_like.default", a, 2)};
}

std::vector<Tensor> zeros_like_kernel(const OpArgs& a) {
  TensorMeta m = zeros_like_meta(a)[0];
  return {kernels::full(m.sizes, 0, m.dtype)};
}
std::vector<Tensor> ones_like_kernel(const OpArgs& a) {
  TensorMeta m = ones_like_meta(a)[0];
  return {kernels::full(m.sizes, 1, m.dtype)};
}
std::vector<Tensor> empty_like_kernel(const OpArgs& a) {
  TensorMeta m = empty_like_meta(a)[0];
  return {make_tensor(m.sizes, m.dtype)};
}
std::vector<Tensor> full_like_kernel(const OpArgs& a) {
  TensorMeta m = full_like_meta(a)[0];
  return {kernels::full(m.sizes, scalar_arg(a, 1), m.dtype)};
}

// clang-format off
const OpDef kRows[] = {
  {.name = "aten.empty.memory_format",
   .schema = "empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
   .meta = empty_meta, .kernel = empty_kernel, .recompute = Recompute::factory},
  {.name = "aten.zeros.default",
   .schema = "zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = zeros_meta, .kernel = zeros_kernel, .recompute = Recompute::factory},
  {.name = "aten.ones.default",
   .schema = "ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = ones_meta, .kernel = ones_kernel, .recompute = Recompute::factory},
  {.name = "aten.full.default",
   .schema = "full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = full_meta, .kernel = full_kernel, .recompute = Recompute::factory},
  {.name = "aten.arange.start_step",
   .schema = "arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
             "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = arange_meta, .kernel = arange_kernel, .recompute = Recompute::factory},
  {.name = "aten.arange.default",
   .schema = "arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = arange_end_meta, .kernel = arange_end_kernel, .recompute = Recompute::factory},
  {.name = "aten.rand.default",
   .schema = "rand(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = rand_meta, .kernel = rand_kernel, .recompute = Recompute::random},
  {.name = "aten.randn.default",
   .schema = "randn(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = randn_meta, .kernel = randn_kernel, .recompute = Recompute::random},
  {.name = "aten.clone.default",
   .schema = "clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor",
   .meta = clone_meta, .kernel = clone_kernel, .vjp = clone_vjp,
   .recompute = Recompute::pointwise, .fusion_expr = "a"},
  {.name = "aten._to_copy.default",
   .schema = "_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
             "MemoryFormat? memory_format=None) -> Tensor",
   .meta = to_copy_meta, .kernel = to_copy_kernel, .vjp = to_copy_vjp,
   .recompute = Recompute::pointwise, .fusion_expr = "a"},
  {.name = "aten.copy.default",
   .schema = "copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor",
   .meta = copy_meta, .kernel = copy_kernel, .vjp = copy_vjp,
   .recompute = Recompute::pointwise, .fusion_expr = "b"},
  {.name = "aten.fill.Scalar", .schema = "fill.Scalar(Tensor self, Scalar value) -> Tensor",
   .meta = fill_meta, .kernel = fill_kernel, .vjp = overwrite_vjp,
   .recompute = Recompute::pointwise, .fusion_expr = "s0"},
  {.name = "aten.zero.default", .schema = "zero(Tensor self) -> Tensor",
   .meta = fill_meta, .kernel = zero_kernel, .vjp = overwrite_vjp,
   .recompute = Recompute::pointwise},
  {.name = "aten.fill.Tensor", .schema = "fill.Tensor(Tensor self, Tensor value) -> Tensor",
   .meta = fill_tensor_meta, .kernel = fill_tensor_kernel, .vjp = fill_tensor_vjp,
   .recompute = Recompute::pointwise},
  {.name = "aten.new_zeros.default",
   .schema = "new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = new_zeros_meta, .kernel = new_zeros_kernel, .recompute = Recompute::factory},
  {.name = "aten.new_ones.default",
   .schema = "new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = new_ones_meta, .kernel = new_ones_kernel, .recompute = Recompute::factory},
  {.name = "aten.new_empty.default",
   .schema = "new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = new_empty_meta, .kernel = new_empty_kernel, .recompute = Recompute::factory},
  {.name = "aten.new_full.default",
   .schema = "new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, "
             "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
   .meta = new_full_meta, .kernel = new_full_kernel, .recompute = Recompute::factory},
  {.name = "aten.zeros_like.default",
   .schema = "zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
   .meta = zeros_like_meta, .kernel = zeros_like_kernel, .recompute = Recompute::factory},
  {.name = "aten.ones_like.default",
   .schema = "ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
   .meta = ones_like_meta, .kernel = ones_like_kernel, .recompute = Recompute::factory},
  {.name = "aten.full_like.default",
   .schema = "full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
   .meta = full_like_meta, .kernel = full_like_kernel, .recompute = Recompute::factory},
  {.name = "aten.empty_like.default",
   .schema = "empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
             "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor",
   .meta = empty_like_meta, .kernel = empty_like_kernel, .recompute = Recompute::factory},
};
// clang-format on

}  // namespace

std::span<const OpDef> factory_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor clone(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.clone.default");
  return ops::call1(def, {a});
}

Tensor contiguous(const Tensor& a) {
  return a.is_contiguous() ? a : clone(a);
}

Tensor to(const Tensor& a, DType dtype) {
  static const ops::OpDef& def = ops::lookup("aten._to_copy.default");
  if (a.dtype() == dtype) return a;
  return ops::call1(def, {a, dtype});
}

Tensor empty(const IntList& sizes, DType dtype) {
  static const ops::OpDef& def = ops::lookup("aten.empty.memory_format");
  return ops::call1(def, {sizes, dtype});
}

Tensor zeros(const IntList& sizes, DType dtype) {
  static const ops::OpDef& def = ops::lookup("aten.zeros.default");
  return ops::call1(def, {sizes, dtype});
}

Tensor ones(const IntList& sizes, DType dtype) {
  static const ops::OpDef& def = ops::lookup("aten.ones.default");
  return ops::call1(def, {sizes, dtype});
}

Tensor full(const IntList& sizes, const Scalar& value, DType dtype) {
  static const ops::OpDef& def = ops::lookup("aten.full.default");
  return ops::call1(def, {sizes, value, dtype});
}

Tensor new_zeros(const Tensor& self, const IntList& size, std::optional<DType> dtype) {
  static const ops::OpDef& def = ops::lookup("aten.new_zeros.default");
  ops::OpArgs args{self, size};
  if (dtype) args.emplace_back(*dtype);
  return ops::call1(def, std::move(args));
}
Tensor new_ones(const Tensor& self, const IntList& size, std::optional<DType> dtype) {
  static const ops::OpDef& def = ops::lookup("aten.new_ones.default");
  ops::OpArgs args{self, size};
  if (dtype) args.emplace_back(*dtype);
  return ops::call1(def, std::move(args));
}
Tensor new_full(const Tensor& self, const IntList& size, const Scalar& value,
                std::optional<DType> dtype) {
  static const ops::OpDef& def = ops::lookup("aten.new_full.default");
  ops::OpArgs args{self, size, value};
  if (dtype) args.emplace_back(*dtype);
  return ops::call1(def, std::move(args));
}
Tensor fill(const Tensor& self, const Tensor& value) {
  static const ops::OpDef& def = ops::lookup("aten.fill.Tensor");
  return ops::call1(def, {self, value});
}

Tensor zeros_like(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.zeros_like.default");
  return ops::call1(def, {a});
}

Tensor ones_like(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.ones_like.default");
  return ops::call1(def, {a});
}

Tensor full_like(const Tensor& a, const Scalar& value) {
  static const ops::OpDef& def = ops::lookup("aten.full_like.default");
  return ops::call1(def, {a, value});
}

Tensor empty_like(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.empty_like.default");
  return ops::call1(def, {a});
}

Tensor arange(const Scalar& end) {
  return arange(0, end, 1);
}

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step) {
  static const ops::OpDef& def = ops::lookup("aten.arange.start_step");
  return ops::call1(def, {start, end, step});
}

namespace {
// An explicit Generator: allocate through the op table (so an active tracer shows up as a fake
// result, which we refuse) and fill eagerly from the generator.
Tensor random_with(Generator& gen, const IntList& sizes, DType dtype, bool gaussian) {
  std::string_view op = gaussian ? "randn" : "rand";
  ops::check_random_dtype(op, dtype);
  Tensor out = empty(sizes, dtype);
  if (out.is_fake())
    throw std::logic_error(std::string(op) +
                           " with an explicit Generator cannot be traced: a graph cannot hold the "
                           "Generator. Seed the default generator with manual_seed() instead.");
  ops::fill_random(out, gen, gaussian);
  return out;
}
}  // namespace

Tensor rand(const IntList& sizes, DType dtype, Generator* gen) {
  static const ops::OpDef& def = ops::lookup("aten.rand.default");
  if (gen) return random_with(*gen, sizes, dtype, /*gaussian=*/false);
  return ops::call1(def, {sizes, dtype});
}

Tensor randn(const IntList& sizes, DType dtype, Generator* gen) {
  static const ops::OpDef& def = ops::lookup("aten.randn.default");
  if (gen) return random_with(*gen, sizes, dtype, /*gaussian=*/true);
  return ops::call1(def, {sizes, dtype});
}

}  // namespace aotgrad
