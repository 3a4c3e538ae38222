// The in-place family: add_, mul_, copy_, zero_, fill_ (Scalar and Tensor) (schema `Tensor(a!) self
// -> Tensor(a!)`).
//
// Reading guide: each row names, in .functional_variant, the functional op that computes the new
// value of self; the tracer records that op instead of the mutation. Kernels compute the new value
// with the same kernel as the functional op and copy it into self, so eager in-place results equal
// the functional ones bit for bit (and an `other` that overlaps self is read before self is
// written). The Eager interpreter (autograd/eager.cpp) bumps the version counter, refuses leaves
// that require grad and records CopySlices for views; the VJPs here only map gradients.
//
// mul_ and the old value of self: other's gradient needs self *before* the multiply, which the op
// overwrites, and eager autograd saves arguments after the kernel ran. So the public mul_()
// computes mul(clone(self), other) and copy_()s the product in whenever `other` requires grad
// (PyTorch clones the original self for the same reason); the row's VJP refuses the case rather
// than use the overwritten value.
#include <stdexcept>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "kernels/factory.h"
#include "kernels/pointwise.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"
#include "tensor/overlap.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

// fill_ and zero_ write one value everywhere, so a self that overlaps itself (an expanded view) is
// no error for them: PyTorch's fill skips the overlap check for that reason (x.expand(2,
// 3).fill_(1) runs; add_ there raises). Their kernels write each memory location once
// (distinct_elements).
TensorMeta idempotent_self_meta(const Tensor& self) {
  return {self.dtype(), self.sizes(), self.strides(), self.storage_offset()};
}

// Self with its expanded dims (stride 0) taken once: the memory locations it reaches, each once,
// so that no two threads write one element.
Tensor distinct_elements(const Tensor& self) {
  if (!is_expanded(self)) return self;
  IntList sizes = self.sizes();
  while (std::optional<size_t> d = first_expanded_dim(sizes, self.strides())) sizes[*d] = 1;
  return make_view(self, sizes, self.strides(), self.storage_offset());
}

// Whether `from` broadcasts to exactly `to` (numpy rules, `to` unchanged).
bool broadcasts_to(const IntList& from, const IntList& to) {
  if (from.size() > to.size()) return false;
  const size_t lead = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != 1 && from[i] != to[lead + i]) return false;
  return true;
}

void check_broadcasts_to_self(std::string_view op, const Tensor& self, const Tensor& other,
                              const char* name) {
  if (!broadcasts_to(other.sizes(), self.sizes()))
    fail(op, std::string("argument '") + name + "' of shape " + shape_to_string(other.sizes()) +
                 " does not broadcast to self's shape " + shape_to_string(self.sizes()) +
                 "; an in-place op cannot change self's shape");
}

void check_castable(std::string_view op, DType result, const Tensor& self) {
  if (!can_cast(result, self.dtype()))
    fail(op, "result type " + std::string(dtype_name(result)) +
                 " can't be cast to the desired output type " +
                 std::string(dtype_name(self.dtype())) +
                 " of self; use the out-of-place op, or convert self with to() first");
}

// ATen's alpha_check for add: integral results take integral alpha, only bool takes bool.
void check_alpha(std::string_view op, DType result, const Scalar& alpha) {
  if (alpha.kind() == Scalar::Kind::boolean && result != DType::b8)
    fail(op, "a boolean alpha is only supported for boolean results");
  if (!is_floating(result) && alpha.is_floating())
    fail(op, "for integral input tensors, argument alpha must not be a floating point number (" +
                 alpha.to_string() + ")");
}

std::vector<TensorMeta> add_tensor_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.add_.Tensor";
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& other = tensor_arg(a, 1);
  check_broadcasts_to_self(op, self, other, "other");
  DType result = result_type(self, other);
  check_alpha(op, result, scalar_arg(a, 2));
  check_castable(op, result, self);
  return {in_place_self_meta(op, self)};
}

std::vector<TensorMeta> add_scalar_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.add_.Scalar";
  const Tensor& self = tensor_arg(a, 0);
  DType result = result_type(self, scalar_arg(a, 1));
  check_alpha(op, result, scalar_arg(a, 2));
  check_castable(op, result, self);
  return {in_place_self_meta(op, self)};
}

std::vector<TensorMeta> mul_tensor_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.mul_.Tensor";
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& other = tensor_arg(a, 1);
  check_broadcasts_to_self(op, self, other, "other");
  check_castable(op, result_type(self, other), self);
  return {in_place_self_meta(op, self)};
}

std::vector<TensorMeta> mul_scalar_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.mul_.Scalar";
  const Tensor& self = tensor_arg(a, 0);
  check_castable(op, result_type(self, scalar_arg(a, 1)), self);
  return {in_place_self_meta(op, self)};
}

// div_.Scalar: what PyTorch's CPU dropout records (the mask scaled by 1 / (1 - p) in place).
std::vector<TensorMeta> div_scalar_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.div_.Scalar";
  const Tensor& self = tensor_arg(a, 0);
  // True division: an integer self cannot hold the result, as in PyTorch.
  DType result = result_type(self, scalar_arg(a, 1));
  check_castable(op, is_floating(result) ? result : DType::f32, self);
  return {in_place_self_meta(op, self)};
}

std::vector<TensorMeta> copy__meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.copy_.default";
  const Tensor& self = tensor_arg(a, 0);
  check_broadcasts_to_self(op, self, tensor_arg(a, 1), "src");
  return {in_place_self_meta(op, self)};
}

std::vector<TensorMeta> zero__meta(const OpArgs& a) {
  return {idempotent_self_meta(tensor_arg(a, 0))};
}

std::vector<TensorMeta> fill__meta(const OpArgs& a) {
  return {idempotent_self_meta(tensor_arg(a, 0))};
}

// ---- kernels: validate, compute the functional value, write it into self ----

std::vector<Tensor> add_tensor_kernel(const OpArgs& a) {
  add_tensor_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::add(self, tensor_arg(a, 1), scalar_arg(a, 2)));
  return {self};
}

std::vector<Tensor> add_scalar_kernel(const OpArgs& a) {
  add_scalar_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::add(self, scalar_arg(a, 1), scalar_arg(a, 2)));
  return {self};
}

std::vector<Tensor> mul_tensor_kernel(const OpArgs& a) {
  mul_tensor_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::mul(self, tensor_arg(a, 1)));
  return {self};
}

std::vector<Tensor> mul_scalar_kernel(const OpArgs& a) {
  mul_scalar_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::mul(self, scalar_arg(a, 1)));
  return {self};
}

std::vector<Tensor> div_scalar_kernel(const OpArgs& a) {
  div_scalar_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::div(self, scalar_arg(a, 1)));
  return {self};
}

bool same_geometry(const Tensor& x, const Tensor& y) {
  return x.sizes() == y.sizes() && x.strides() == y.strides() &&
         x.storage_offset() == y.storage_offset() && x.dtype() == y.dtype();
}

std::vector<Tensor> copy__kernel(const OpArgs& a) {
  copy__meta(a);
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& src = tensor_arg(a, 1);
  if (src.storage() != self.storage()) {
    kernels::copy_into(self, src);
  } else if (!same_geometry(self, src)) {
    // src overlaps the memory being written (e.g. x.copy_(x.t())): read it all first.
    kernels::copy_into(self, kernels::contiguous_copy(src, src.dtype()));
  }
  return {self};
}

std::vector<Tensor> zero__kernel(const OpArgs& a) {
  zero__meta(a);
  kernels::fill_value(distinct_elements(tensor_arg(a, 0)), 0);
  return {tensor_arg(a, 0)};
}

std::vector<Tensor> fill__kernel(const OpArgs& a) {
  fill__meta(a);
  kernels::fill_value(distinct_elements(tensor_arg(a, 0)), scalar_arg(a, 1));
  return {tensor_arg(a, 0)};
}

// fill_.Tensor (swin_t's attention mask, built in forward): fill.Tensor's checks and value.
std::vector<TensorMeta> fill_tensor__meta(const OpArgs& a) {
  static const OpDef& functional = lookup("aten.fill.Tensor");
  functional.meta(a);
  return {idempotent_self_meta(tensor_arg(a, 0))};
}

std::vector<Tensor> fill_tensor__kernel(const OpArgs& a) {
  static const OpDef& functional = lookup("aten.fill.Tensor");
  fill_tensor__meta(a);
  const Tensor self = distinct_elements(tensor_arg(a, 0));
  const Tensor value = functional.kernel(a).at(0);  // self's shape, one value throughout
  kernels::copy_into(self, make_view(value, self.sizes(), value.strides(), value.storage_offset()));
  return {tensor_arg(a, 0)};
}

// ---- VJPs: the gradient reaching self's new value, mapped to self's old value and the others ----

// A gradient for `input` from one that was broadcast and cast into self.
Tensor reduce_to(const Tensor& g, const Tensor& input) {
  Tensor r = g.sizes() == input.sizes() ? g : sum_to_size(g, input.sizes());
  return to(r, input.dtype());
}

std::vector<Tensor> add_tensor_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  Scalar alpha = scalar_arg(c.args, 2);
  Tensor g_other;
  if (c.needs(1)) g_other = reduce_to(alpha == Scalar(1) ? g : mul(g, alpha), c.input(1));
  return {c.needs(0) ? g : Tensor(), g_other};
}

std::vector<Tensor> add_scalar_vjp(const VjpContext& c) {
  return {c.needs(0) ? c.grad() : Tensor()};
}

// Self's value from before the write is saved for other's gradient (autograd::OpNode::
// saves_written_input), as PyTorch's original_self.
std::vector<Tensor> mul_tensor_vjp(const VjpContext& c) {
  Tensor g_self = c.needs(0) ? to(mul(c.grad(), c.input(1)), c.input(0).dtype()) : Tensor();
  Tensor g_other;
  if (c.needs(1)) {
    g_other = reduce_to(mul(c.grad(), c.input(0)), c.input(1));
    if (g_other.dtype() != c.input(1).dtype()) g_other = to(g_other, c.input(1).dtype());
  }
  return {g_self, g_other};
}

std::vector<Tensor> mul_scalar_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {to(mul(c.grad(), scalar_arg(c.args, 1)), c.input(0).dtype())};
}

std::vector<Tensor> div_scalar_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {to(div(c.grad(), scalar_arg(c.args, 1)), c.input(0).dtype())};
}

// copy_ overwrites self: src gets all of the gradient, self's old value zeros, as
// derivatives.yaml's `self: zeros_like(grad)` and CopyBackwards give (defined, so the engine
// still runs what produced the old value: its leaves get zero gradients and its saved values are
// version-checked, as in PyTorch).
std::vector<Tensor> copy__vjp(const VjpContext& c) {
  return {c.needs(0) ? zeros_like(c.grad()) : Tensor(),
          c.needs(1) ? reduce_to(c.grad(), c.input(1)) : Tensor()};
}

// self's old value is overwritten (zeros, as copy_'s); the 0-dim value receives the sum, as
// fill.Tensor's.
std::vector<Tensor> fill_tensor__vjp(const VjpContext& c) {
  Tensor g_self = c.needs(0) ? zeros_like(c.grad()) : Tensor();
  if (!c.needs(1)) return {g_self, Tensor()};
  Tensor g = sum(c.grad());
  return {g_self, g.dtype() == c.input(1).dtype() ? g : to(g, c.input(1).dtype())};
}

// clang-format off
const OpDef kRows[] = {
  {.name = "aten.add_.Tensor",
   .schema = "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
   .meta = add_tensor_meta, .kernel = add_tensor_kernel, .vjp = add_tensor_vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.add.Tensor"},
  {.name = "aten.add_.Scalar",
   .schema = "add_.Scalar(Tensor(a!) self, Scalar other, Scalar alpha=1) -> Tensor(a!)",
   .meta = add_scalar_meta, .kernel = add_scalar_kernel, .vjp = add_scalar_vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.add.Scalar"},
  {.name = "aten.mul_.Tensor", .schema = "mul_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
   .meta = mul_tensor_meta, .kernel = mul_tensor_kernel, .vjp = mul_tensor_vjp,
   // other is read by self's gradient, self (its value before the write) by other's.
   .saves = {.inputs = bit(0) | bit(1), .read_by = {bit(1), bit(0)}},
   .recompute = Recompute::effectful,
   .functional_variant = "aten.mul.Tensor"},
  {.name = "aten.mul_.Scalar", .schema = "mul_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
   .meta = mul_scalar_meta, .kernel = mul_scalar_kernel, .vjp = mul_scalar_vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.mul.Scalar"},
  {.name = "aten.div_.Scalar", .schema = "div_.Scalar(Tensor(a!) self, Scalar other) -> Tensor(a!)",
   .meta = div_scalar_meta, .kernel = div_scalar_kernel, .vjp = div_scalar_vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.div.Scalar"},
  {.name = "aten.copy_.default",
   .schema = "copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
   .meta = copy__meta, .kernel = copy__kernel, .vjp = copy__vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.copy.default"},
  {.name = "aten.zero_.default", .schema = "zero_(Tensor(a!) self) -> Tensor(a!)",
   .meta = zero__meta, .kernel = zero__kernel, .vjp = overwrite_vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.zero.default"},
  {.name = "aten.fill_.Scalar", .schema = "fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
   .meta = fill__meta, .kernel = fill__kernel, .vjp = overwrite_vjp,
   .recompute = Recompute::effectful, .functional_variant = "aten.fill.Scalar"},
  {.name = "aten.fill_.Tensor", .schema = "fill_.Tensor(Tensor(a!) self, Tensor value) -> Tensor(a!)",
   .meta = fill_tensor__meta, .kernel = fill_tensor__kernel, .vjp = fill_tensor__vjp,
   .saves = {}, .recompute = Recompute::effectful, .functional_variant = "aten.fill.Tensor"},
};
// clang-format on

}  // namespace

std::span<const OpDef> inplace_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor& add_(Tensor& self, const Tensor& other, const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.add_.Tensor");
  ops::dispatch(def, {self, other, alpha});
  return self;
}

Tensor& add_(Tensor& self, const Scalar& other, const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.add_.Scalar");
  ops::dispatch(def, {self, other, alpha});
  return self;
}

Tensor& mul_(Tensor& self, const Tensor& other) {
  static const ops::OpDef& def = ops::lookup("aten.mul_.Tensor");
  if (autograd::grad_mode_enabled() && (self.requires_grad() || other.requires_grad()) &&
      other.storage() == self.storage()) {
    // The row saves `other` after the kernel ran; an alias of self would be saved overwritten.
    ops::dispatch(def, {self, clone(other)});
    return self;
  }
  ops::dispatch(def, {self, other});
  return self;
}

Tensor& mul_(Tensor& self, const Scalar& other) {
  static const ops::OpDef& def = ops::lookup("aten.mul_.Scalar");
  ops::dispatch(def, {self, other});
  return self;
}

Tensor& copy_(Tensor& self, const Tensor& src) {
  static const ops::OpDef& def = ops::lookup("aten.copy_.default");
  ops::dispatch(def, {self, src});
  return self;
}

Tensor& zero_(Tensor& self) {
  static const ops::OpDef& def = ops::lookup("aten.zero_.default");
  ops::dispatch(def, {self});
  return self;
}

Tensor& fill_(Tensor& self, const Scalar& value) {
  static const ops::OpDef& def = ops::lookup("aten.fill_.Scalar");
  ops::dispatch(def, {self, value});
  return self;
}

}  // namespace aotgrad
