// The activation family beyond relu/gelu: hardtanh, hardsigmoid, hardswish, silu, their backward
// ops, and the in-place forms real models record (relu_, sigmoid_, tanh_, hardtanh_, hardsigmoid_,
// hardswish_, silu_ as make_fx writes them).
//
// Reading guide: meta / kernel / VJP per op, then the rows, then the public functions of
// aotgrad/activation.h. VJPs follow PyTorch's derivatives.yaml: each forward op's VJP is its
// *_backward op on the saved input, so traced backward graphs read like PyTorch's, and each
// backward op is itself differentiable (double backward).
//
// In-place rows: the tracer records .functional_variant instead, so compiled functions never run
// them. Eagerly, relu_/sigmoid_/tanh_/hardtanh_ differentiate from their result, as PyTorch's
// formulas do (the result is what eager autograd saves for an in-place op). hardsigmoid_,
// hardswish_ and silu_ need the input from before the write: their rows save it (kInput0), and
// eager autograd saves a clone taken before the kernel runs, as PyTorch's original_self
// (autograd::OpNode::saves_written_input). Written through a view, the gradient of the old
// value then reaches the base's window as PyTorch's CopySlices gives it.
#include "aotgrad/activation.h"

#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "kernels/activation.h"
#include "kernels/copy.h"
#include "kernels/pointwise.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"
#include "tensor/iter.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

std::vector<TensorMeta> one(const IntList& sizes, DType dtype) {
  return {TensorMeta::contiguous(sizes, dtype)};
}

Tensor grad_for(const Tensor& g, const Tensor& input) {
  Tensor r = g.sizes() == input.sizes() ? g : sum_to_size(g, input.sizes());
  return cast_like(r, input);
}

void check_floating(std::string_view op, const char* arg, DType t) {
  if (!is_floating(t))
    fail(op, std::string(arg) + " must be a floating tensor (f32, f64, f16, bf16), got " +
                 std::string(dtype_name(t)) + "; convert it with .to(f32) first");
}

// ---- forward ops ----

constexpr char kHardtanh[] = "aten.hardtanh.default";
constexpr char kHardsigmoid[] = "aten.hardsigmoid.default";
constexpr char kHardswish[] = "aten.hardswish.default";
constexpr char kSilu[] = "aten.silu.default";
constexpr char kHardtanhBackward[] = "aten.hardtanh_backward.default";
constexpr char kHardsigmoidBackward[] = "aten.hardsigmoid_backward.default";
constexpr char kHardswishBackward[] = "aten.hardswish_backward.default";
constexpr char kSiluBackward[] = "aten.silu_backward.default";

std::vector<TensorMeta> hardtanh_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dtype() == DType::b8)
    fail(kHardtanh, "hardtanh of a bool tensor is not supported; convert it with .to(f32) first");
  return one(self.sizes(), self.dtype());
}
std::vector<Tensor> hardtanh_kernel(const OpArgs& a) {
  hardtanh_meta(a);
  return {kernels::hardtanh(tensor_arg(a, 0), scalar_arg(a, 1), scalar_arg(a, 2))};
}
std::vector<Tensor> hardtanh_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(kHardtanhBackward);
  return {call1(backward, {c.grad(), c.input(0), scalar_arg(c.args, 1), scalar_arg(c.args, 2)})};
}

template <const char* kName>
std::vector<TensorMeta> float_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  check_floating(kName, "self", self.dtype());
  return one(self.sizes(), self.dtype());
}

template <const char* kName, Tensor (*kKernel)(const Tensor&)>
std::vector<Tensor> float_kernel(const OpArgs& a) {
  float_meta<kName>(a);
  return {kKernel(tensor_arg(a, 0))};
}

// The VJP of a forward op whose backward op reads (grad, self).
template <const char* kBackward>
std::vector<Tensor> self_backward_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(kBackward);
  return {call1(backward, {c.grad(), c.input(0)})};
}

// ---- backward ops ----

template <const char* kName>
std::vector<TensorMeta> backward_meta(const OpArgs& a) {
  const Tensor &grad = tensor_arg(a, 0), &self = tensor_arg(a, 1);
  check_floating(kName, "grad_output", grad.dtype());
  IntList sizes;
  try {
    sizes = broadcast_shapes(grad.sizes(), self.sizes());
  } catch (const std::invalid_argument& e) {
    fail(kName, "grad_output " + shape_to_string(grad.sizes()) + " and self " +
                    shape_to_string(self.sizes()) + " must broadcast (" + e.what() + ")");
  }
  return one(sizes, result_type(grad, self));
}

template <const char* kName, Tensor (*kKernel)(const Tensor&, const Tensor&)>
std::vector<Tensor> backward_kernel(const OpArgs& a) {
  backward_meta<kName>(a);
  return {kKernel(tensor_arg(a, 0), tensor_arg(a, 1))};
}

std::vector<Tensor> hardtanh_backward_kernel(const OpArgs& a) {
  backward_meta<kHardtanhBackward>(a);
  return {kernels::hardtanh_backward(tensor_arg(a, 0), tensor_arg(a, 1), scalar_arg(a, 2),
                                     scalar_arg(a, 3))};
}

// Piecewise-linear backward ops are linear in grad_output with a mask that is piecewise constant
// in self: d/dgrad is the op itself on the incoming gradient, d/dself is zero.
std::vector<Tensor> hardtanh_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kHardtanhBackward);
  if (!c.needs(0)) return {Tensor(), Tensor()};
  return {
      grad_for(call1(self_op, {c.grad(), c.input(1), scalar_arg(c.args, 2), scalar_arg(c.args, 3)}),
               c.input(0)),
      Tensor()};
}
std::vector<Tensor> hardsigmoid_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kHardsigmoidBackward);
  if (!c.needs(0)) return {Tensor(), Tensor()};
  return {grad_for(call1(self_op, {c.grad(), c.input(1)}), c.input(0)), Tensor()};
}

// hardswish'(x) = x/3 + 1/2 on [-3, 3]: d/dself = gg * grad / 3 on (-3, 3) (derivatives.yaml),
// which is 2 * hardsigmoid_backward(gg * grad, self).
std::vector<Tensor> hardswish_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kHardswishBackward);
  static const OpDef& hs_backward = lookup(kHardsigmoidBackward);
  const Tensor &g = c.input(0), &x = c.input(1);
  Tensor gg = c.needs(0) ? grad_for(call1(self_op, {c.grad(), x}), g) : Tensor();
  Tensor gx =
      c.needs(1) ? grad_for(mul(call1(hs_backward, {mul(c.grad(), g), x}), 2), x) : Tensor();
  return {gg, gx};
}

// silu'(x) = s (1 + x (1 - s)); silu''(x) = s (1 - s) (2 + x (1 - 2 s)), s = sigmoid(x).
std::vector<Tensor> silu_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kSiluBackward);
  const Tensor &g = c.input(0), &x = c.input(1);
  Tensor gg = c.needs(0) ? grad_for(call1(self_op, {c.grad(), x}), g) : Tensor();
  Tensor gx;
  if (c.needs(1)) {
    Tensor s = sigmoid(x);
    Tensor one_minus_s = add(neg(s), 1);
    Tensor second = mul(mul(s, one_minus_s), add(mul(x, add(mul(s, -2), 1)), 2));
    gx = grad_for(mul(mul(c.grad(), g), second), x);
  }
  return {gg, gx};
}

// ---- in-place forms ----

// In-place row of functional op kFunctional: the same checks, the functional value copied in.
template <const char* kName, const char* kFunctional>
std::vector<TensorMeta> inplace_meta(const OpArgs& a) {
  static const OpDef& functional = lookup(kFunctional);
  functional.meta(a);
  return {in_place_self_meta(kName, tensor_arg(a, 0))};
}
template <const char* kName, const char* kFunctional>
std::vector<Tensor> inplace_kernel(const OpArgs& a) {
  static const OpDef& functional = lookup(kFunctional);
  inplace_meta<kName, kFunctional>(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, functional.kernel(a).at(0));
  return {self};
}

// VJPs from the result (saved output 0), as PyTorch's formulas for these in-place ops.
std::vector<Tensor> relu__vjp(const VjpContext& c) {
  static const OpDef& threshold_backward = lookup("aten.threshold_backward.default");
  return {call1(threshold_backward, {c.grad(), c.output(), Scalar(0)})};
}
std::vector<Tensor> sigmoid__vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.sigmoid_backward.default");
  return {call1(backward, {c.grad(), c.output()})};
}
std::vector<Tensor> tanh__vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.tanh_backward.default");
  return {call1(backward, {c.grad(), c.output()})};
}
std::vector<Tensor> hardtanh__vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(kHardtanhBackward);
  return {call1(backward, {c.grad(), c.output(), scalar_arg(c.args, 1), scalar_arg(c.args, 2)})};
}
constexpr char kRelu_[] = "aten.relu_.default";
constexpr char kSigmoid_[] = "aten.sigmoid_.default";
constexpr char kTanh_[] = "aten.tanh_.default";
constexpr char kHardtanh_[] = "aten.hardtanh_.default";
constexpr char kHardsigmoid_[] = "aten.hardsigmoid_.default";
constexpr char kHardswish_[] = "aten.hardswish_.default";
constexpr char kSilu_[] = "aten.silu_.default";
constexpr char kRelu[] = "aten.relu.default";
constexpr char kSigmoid[] = "aten.sigmoid.default";
constexpr char kTanh[] = "aten.tanh.default";

constexpr SaveMask kInput0{.inputs = bit(0)};
constexpr SaveMask kInputs01{.inputs = bit(0) | bit(1)};
constexpr SaveMask kSecondInput{.inputs = bit(1)};
constexpr SaveMask kOutput0{.outputs = bit(0)};

// clang-format off
const OpDef kRows[] = {
  {.name = kHardtanh,
   .schema = "hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor",
   .meta = hardtanh_meta, .kernel = hardtanh_kernel, .vjp = hardtanh_vjp, .saves = kInput0},
  {.name = kHardsigmoid, .schema = "hardsigmoid(Tensor self) -> Tensor",
   .meta = float_meta<kHardsigmoid>,
   .kernel = float_kernel<kHardsigmoid, kernels::hardsigmoid>,
   .vjp = self_backward_vjp<kHardsigmoidBackward>, .saves = kInput0},
  {.name = kHardswish, .schema = "hardswish(Tensor self) -> Tensor",
   .meta = float_meta<kHardswish>, .kernel = float_kernel<kHardswish, kernels::hardswish>,
   .vjp = self_backward_vjp<kHardswishBackward>, .saves = kInput0},
  {.name = kSilu, .schema = "silu(Tensor self) -> Tensor",
   .meta = float_meta<kSilu>, .kernel = float_kernel<kSilu, kernels::silu>,
   .vjp = self_backward_vjp<kSiluBackward>, .saves = kInput0},
  {.name = kHardtanhBackward,
   .schema = "hardtanh_backward(Tensor grad_output, Tensor self, Scalar min_val, Scalar max_val) "
             "-> Tensor",
   .meta = backward_meta<kHardtanhBackward>, .kernel = hardtanh_backward_kernel,
   .vjp = hardtanh_backward_vjp, .saves = kSecondInput},
  {.name = kHardsigmoidBackward,
   .schema = "hardsigmoid_backward(Tensor grad_output, Tensor self) -> Tensor",
   .meta = backward_meta<kHardsigmoidBackward>,
   .kernel = backward_kernel<kHardsigmoidBackward, kernels::hardsigmoid_backward>,
   .vjp = hardsigmoid_backward_vjp, .saves = kSecondInput},
  {.name = kHardswishBackward,
   .schema = "hardswish_backward(Tensor grad_output, Tensor self) -> Tensor",
   .meta = backward_meta<kHardswishBackward>,
   .kernel = backward_kernel<kHardswishBackward, kernels::hardswish_backward>,
   .vjp = hardswish_backward_vjp, .saves = kInputs01},
  {.name = kSiluBackward,
   .schema = "silu_backward(Tensor grad_output, Tensor self) -> Tensor",
   .meta = backward_meta<kSiluBackward>,
   .kernel = backward_kernel<kSiluBackward, kernels::silu_backward>,
   .vjp = silu_backward_vjp, .saves = kInputs01},
  {.name = kRelu_, .schema = "relu_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_meta<kRelu_, kRelu>, .kernel = inplace_kernel<kRelu_, kRelu>,
   .vjp = relu__vjp, .saves = kOutput0, .recompute = Recompute::effectful,
   .functional_variant = kRelu},
  {.name = kSigmoid_, .schema = "sigmoid_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_meta<kSigmoid_, kSigmoid>, .kernel = inplace_kernel<kSigmoid_, kSigmoid>,
   .vjp = sigmoid__vjp, .saves = kOutput0, .recompute = Recompute::effectful,
   .functional_variant = kSigmoid},
  {.name = kTanh_, .schema = "tanh_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_meta<kTanh_, kTanh>, .kernel = inplace_kernel<kTanh_, kTanh>,
   .vjp = tanh__vjp, .saves = kOutput0, .recompute = Recompute::effectful,
   .functional_variant = kTanh},
  {.name = kHardtanh_,
   .schema = "hardtanh_(Tensor(a!) self, Scalar min_val=-1, Scalar max_val=1) -> Tensor(a!)",
   .meta = inplace_meta<kHardtanh_, kHardtanh>, .kernel = inplace_kernel<kHardtanh_, kHardtanh>,
   .vjp = hardtanh__vjp, .saves = kOutput0, .recompute = Recompute::effectful,
   .functional_variant = kHardtanh},
  {.name = kHardsigmoid_, .schema = "hardsigmoid_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_meta<kHardsigmoid_, kHardsigmoid>,
   .kernel = inplace_kernel<kHardsigmoid_, kHardsigmoid>,
   .vjp = self_backward_vjp<kHardsigmoidBackward>, .saves = kInput0, .recompute = Recompute::effectful,
   .functional_variant = kHardsigmoid},
  {.name = kHardswish_, .schema = "hardswish_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_meta<kHardswish_, kHardswish>,
   .kernel = inplace_kernel<kHardswish_, kHardswish>,
   .vjp = self_backward_vjp<kHardswishBackward>, .saves = kInput0, .recompute = Recompute::effectful,
   .functional_variant = kHardswish},
  {.name = kSilu_, .schema = "silu_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_meta<kSilu_, kSilu>, .kernel = inplace_kernel<kSilu_, kSilu>,
   .vjp = self_backward_vjp<kSiluBackward>, .saves = kInput0, .recompute = Recompute::effectful,
   .functional_variant = kSilu},
};
// clang-format on

}  // namespace

std::span<const OpDef> activation_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  static const ops::OpDef& def = ops::lookup("aten.hardtanh.default");
  return ops::call1(def, {self, min_val, max_val});
}
Tensor hardsigmoid(const Tensor& self) {
  static const ops::OpDef& def = ops::lookup("aten.hardsigmoid.default");
  return ops::call1(def, {self});
}
Tensor hardswish(const Tensor& self) {
  static const ops::OpDef& def = ops::lookup("aten.hardswish.default");
  return ops::call1(def, {self});
}
Tensor silu(const Tensor& self) {
  static const ops::OpDef& def = ops::lookup("aten.silu.default");
  return ops::call1(def, {self});
}

namespace {
Tensor& dispatch_inplace(const char* name, Tensor& self, ops::OpArgs args) {
  const ops::OpDef& def = ops::lookup(name);
  ops::dispatch(def, std::move(args));
  return self;
}
}  // namespace

Tensor& relu_(Tensor& self) {
  return dispatch_inplace("aten.relu_.default", self, {self});
}
Tensor& sigmoid_(Tensor& self) {
  return dispatch_inplace("aten.sigmoid_.default", self, {self});
}
Tensor& tanh_(Tensor& self) {
  return dispatch_inplace("aten.tanh_.default", self, {self});
}
Tensor& hardtanh_(Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return dispatch_inplace("aten.hardtanh_.default", self, {self, min_val, max_val});
}
Tensor& hardsigmoid_(Tensor& self) {
  return dispatch_inplace("aten.hardsigmoid_.default", self, {self});
}
Tensor& hardswish_(Tensor& self) {
  return dispatch_inplace("aten.hardswish_.default", self, {self});
}
Tensor& silu_(Tensor& self) {
  return dispatch_inplace("aten.silu_.default", self, {self});
}

}  // namespace aotgrad
