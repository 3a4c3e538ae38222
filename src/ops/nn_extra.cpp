// Rows of the LibTorch-surface ops (issue 17): leaky_relu (forward, backward, in place) and the
// losses binary_cross_entropy (+ backward), binary_cross_entropy_with_logits, smooth_l1_loss and
// huber_loss (+ backward); the public functions of aotgrad/nn_ops.h that wrap them, and the
// composites l1_loss, feature_dropout / dropout2d and conv_transpose1d / 2d.
//
// Reading guide: meta / kernel / VJP per op, then the rows, then the public functions. As in
// PyTorch's derivatives.yaml, a forward row's VJP for self is its *_backward row, so traced
// backward graphs read like PyTorch's; the target gradients (and the whole VJP of
// binary_cross_entropy_with_logits, whose 1.13 backward ops we do not keep) are compositions of
// differentiable public ops. Every backward row has a VJP too, so double backward works.
// weight / pos_weight are not differentiable (as in PyTorch): asking for their gradient is an
// error naming the argument.
#include "kernels/nn_extra.h"

#include <cmath>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/math.h"
#include "aotgrad/nn_ops.h"
#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "kernels/copy.h"
#include "kernels/nn.h"
#include "kernels/pointwise.h"
#include "ops/families.h"
#include "ops/op.h"
#include "tensor/promotion.h"
#include "ops/row_helpers.h"
#include "tensor/iter.h"

namespace aotgrad::ops {
namespace {

using kernels::RobustLoss;

Tensor optional_tensor(const OpArgs& a, size_t i) {
  return is_none(a, i) ? Tensor() : tensor_arg(a, i);
}

// Position of argument `arg` among the differentiable inputs, or -1 when it is None.
int flat_index(const OpArgs& args, size_t arg) {
  if (!std::holds_alternative<Tensor>(args[arg])) return -1;
  int n = 0;
  for (size_t i = 0; i < arg; ++i) n += std::holds_alternative<Tensor>(args[i]) ? 1 : 0;
  return n;
}

size_t tensor_arg_count(const OpArgs& args) {
  size_t n = 0;
  for (const Arg& a : args) n += std::holds_alternative<Tensor>(a) ? 1 : 0;
  return n;
}

// The gradient of an input of `like`'s shape and dtype from one of the broadcast shape.
Tensor grad_for(const Tensor& g, const Tensor& like) {
  Tensor r = g.sizes() == like.sizes() ? g : sum_to_size(g, like.sizes());
  return cast_like(r, like);
}

void check_floating(std::string_view op, const char* arg, const Tensor& t) {
  if (!is_floating(t.dtype()))
    fail(op, std::string(arg) + " must be a floating tensor (f32, f64, f16, bf16), got " +
                 std::string(dtype_name(t.dtype())) + "; convert it with .to(f32) first");
}

IntList broadcast_checked(std::string_view op, const char* a_name, const IntList& a,
                          const char* b_name, const IntList& b) {
  try {
    return broadcast_shapes(a, b);
  } catch (const std::invalid_argument& e) {
    fail(op, std::string(a_name) + " " + shape_to_string(a) + " and " + b_name + " " +
                 shape_to_string(b) + " must broadcast (" + e.what() + ")");
  }
}

int64_t checked_reduction(std::string_view op, int64_t r) {
  if (r < kernels::kReductionNone || r > kernels::kReductionSum)
    fail(op, "reduction must be 0 (none), 1 (mean) or 2 (sum), got " + std::to_string(r));
  return r;
}

IntList loss_shape(int64_t reduction, const IntList& shape) {
  return reduction == kernels::kReductionNone ? shape : IntList{};
}

// grad_output of a loss backward row must have the loss's shape.
void check_grad_shape(std::string_view op, const Tensor& grad, const IntList& expected) {
  if (grad.sizes() != expected)
    fail(op, "grad_output has shape " + shape_to_string(grad.sizes()) + ", expected " +
                 shape_to_string(expected) + " (the loss's shape for this reduction)");
  check_floating(op, "grad_output", grad);
}

// 1 / numel of the loss's elements for mean, else 1: the factor every element's gradient gets.
double mean_scale(int64_t reduction, const IntList& shape) {
  return reduction == kernels::kReductionMean ? 1.0 / static_cast<double>(numel_of(shape)) : 1.0;
}

[[noreturn]] void not_differentiable(std::string_view op, const char* arg) {
  fail(op, std::string("is not differentiable with respect to ") + arg +
               " (as in PyTorch); detach it or call requires_grad_(false) on it");
}

// ---- leaky_relu ----

constexpr char kLeakyRelu[] = "aten.leaky_relu.default";
constexpr char kLeakyReluBackward[] = "aten.leaky_relu_backward.default";
constexpr char kLeakyRelu_[] = "aten.leaky_relu_.default";

std::vector<TensorMeta> leaky_relu_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  check_floating(kLeakyRelu, "self", self);
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> leaky_relu_kernel(const OpArgs& a) {
  leaky_relu_meta(a);
  return {kernels::leaky_relu(tensor_arg(a, 0), scalar_arg(a, 1))};
}
std::vector<Tensor> leaky_relu_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(kLeakyReluBackward);
  return {call1(backward, {c.grad(), c.input(0), scalar_arg(c.args, 1), false})};
}

std::vector<TensorMeta> leaky_relu_backward_meta(const OpArgs& a) {
  const Tensor &grad = tensor_arg(a, 0), &self = tensor_arg(a, 1);
  check_floating(kLeakyReluBackward, "grad_output", grad);
  check_floating(kLeakyReluBackward, "self", self);
  IntList shape =
      broadcast_checked(kLeakyReluBackward, "grad_output", grad.sizes(), "self", self.sizes());
  return {TensorMeta::contiguous(shape, result_type(grad, self))};
}
std::vector<Tensor> leaky_relu_backward_kernel(const OpArgs& a) {
  leaky_relu_backward_meta(a);
  // From the result, the sign of x is only recoverable for a non-negative slope (PyTorch's rule).
  if (bool_arg(a, 3) && scalar_arg(a, 2).to_double() < 0)
    fail(kLeakyReluBackward,
         "the in-place leaky_relu_ was called with a negative slope, whose gradient cannot be "
         "computed from its result; call the out-of-place leaky_relu instead");
  return {kernels::leaky_relu_backward(tensor_arg(a, 0), tensor_arg(a, 1), scalar_arg(a, 2))};
}
// Linear in grad_output with a mask piecewise constant in self: d/dself is zero.
std::vector<Tensor> leaky_relu_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kLeakyReluBackward);
  if (!c.needs(0)) return {Tensor(), Tensor()};
  return {grad_for(call1(self_op, {c.grad(), c.input(1), scalar_arg(c.args, 2), c.args[3]}),
                   c.input(0)),
          Tensor()};
}

std::vector<TensorMeta> leaky_relu__meta(const OpArgs& a) {
  leaky_relu_meta(a);
  return {in_place_self_meta(kLeakyRelu_, tensor_arg(a, 0))};
}
std::vector<Tensor> leaky_relu__kernel(const OpArgs& a) {
  leaky_relu__meta(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::leaky_relu(self, scalar_arg(a, 1)));
  return {self};
}
// From the result, as PyTorch (self_is_result = true; refused for a negative slope).
std::vector<Tensor> leaky_relu__vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(kLeakyReluBackward);
  return {call1(backward, {c.grad(), c.output(), scalar_arg(c.args, 1), true})};
}

// ---- binary_cross_entropy ----

constexpr char kBce[] = "aten.binary_cross_entropy.default";
constexpr char kBceBackward[] = "aten.binary_cross_entropy_backward.default";
constexpr char kBceLogits[] = "aten.binary_cross_entropy_with_logits.default";

struct LossSetup {
  IntList shape;  // of the per-element loss
  DType dtype;
  int64_t reduction;
};

// self and target of one shape (PyTorch refuses to broadcast them), an optional weight that
// broadcasts to it; args[first_weight] is weight, then the optional pos_weight when given.
LossSetup bce_setup(std::string_view op, const OpArgs& a, size_t first, size_t reduction_arg,
                    bool logits) {
  const Tensor &self = tensor_arg(a, first), &target = tensor_arg(a, first + 1);
  check_floating(op, "self", self);
  check_floating(op, "target", target);
  if (self.sizes() != target.sizes())
    fail(op, "target has shape " + shape_to_string(target.sizes()) + " but self has shape " +
                 shape_to_string(self.sizes()) + "; give them the same shape");
  LossSetup s{self.sizes(), promote_types(self.dtype(), target.dtype()),
              checked_reduction(op, int_arg(a, reduction_arg))};
  const char* names[] = {"weight", "pos_weight"};
  for (size_t k = 0; k < (logits ? 2u : 1u); ++k) {
    const Tensor w = optional_tensor(a, first + 2 + k);
    if (!w.defined()) continue;
    check_floating(op, names[k], w);
    if (broadcast_checked(op, names[k], w.sizes(), "self", self.sizes()) != self.sizes())
      fail(op, std::string(names[k]) + " of shape " + shape_to_string(w.sizes()) +
                   " must broadcast to self's shape " + shape_to_string(self.sizes()));
  }
  return s;
}

std::vector<TensorMeta> bce_meta(const OpArgs& a) {
  LossSetup s = bce_setup(kBce, a, 0, 3, false);
  return {TensorMeta::contiguous(loss_shape(s.reduction, s.shape), s.dtype)};
}
std::vector<Tensor> bce_kernel(const OpArgs& a) {
  LossSetup s = bce_setup(kBce, a, 0, 3, false);
  const Tensor& self = tensor_arg(a, 0);
  const bool in_range =
      kernels::all_any(true, kernels::compare(kernels::Compare::ge, self, Scalar(0)), {}, false)
          .item<bool>() &&
      kernels::all_any(true, kernels::compare(kernels::Compare::le, self, Scalar(1)), {}, false)
          .item<bool>();
  if (!in_range) fail(kBce, "all elements of self (the probabilities) must be between 0 and 1");
  return {kernels::binary_cross_entropy(self, tensor_arg(a, 1), optional_tensor(a, 2), s.reduction,
                                        s.dtype)};
}

// d/dtarget of binary_cross_entropy: grad * w * (log(1 - x) - log(x)), scaled for mean.
Tensor bce_target_grad(const Tensor& grad, const Tensor& x, const Tensor& w, int64_t reduction) {
  Tensor g = mul(grad, sub(log(add(neg(x), 1)), log(x)));
  if (w.defined()) g = mul(g, w);
  return mul(g, mean_scale(reduction, x.sizes()));
}

std::vector<Tensor> bce_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(kBceBackward);
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  const Tensor &x = c.input(0), &t = c.input(1);
  const Tensor w = optional_tensor(c.args, 2);
  const int64_t reduction = int_arg(c.args, 3);
  if (w.defined() && c.needs(static_cast<size_t>(flat_index(c.args, 2))))
    not_differentiable(kBce, "weight");
  if (c.needs(0)) grads[0] = grad_for(call1(backward, {c.grad(), x, t, c.args[2], reduction}), x);
  if (c.needs(1)) grads[1] = grad_for(bce_target_grad(c.grad(), x, w, reduction), t);
  return grads;
}

std::vector<TensorMeta> bce_backward_meta(const OpArgs& a) {
  LossSetup s = bce_setup(kBceBackward, a, 1, 4, false);
  check_grad_shape(kBceBackward, tensor_arg(a, 0), loss_shape(s.reduction, s.shape));
  return {TensorMeta::contiguous(s.shape, s.dtype)};
}
std::vector<Tensor> bce_backward_kernel(const OpArgs& a) {
  LossSetup s = bce_setup(kBceBackward, a, 1, 4, false);
  bce_backward_meta(a);
  return {kernels::binary_cross_entropy_backward(tensor_arg(a, 0), tensor_arg(a, 1),
                                                 tensor_arg(a, 2), optional_tensor(a, 3),
                                                 s.reduction, s.dtype)};
}
// backward = s g w (x - t) / (x (1 - x)): d/dx = s g w (x^2 - 2 t x + t) / (x (1 - x))^2,
// d/dt = -s g w / (x (1 - x)).
std::vector<Tensor> bce_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kBceBackward);
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  const Tensor &g = c.input(0), &x = c.input(1), &t = c.input(2);
  const Tensor w = optional_tensor(c.args, 3);
  const int64_t reduction = int_arg(c.args, 4);
  if (w.defined() && c.needs(static_cast<size_t>(flat_index(c.args, 3))))
    not_differentiable(kBceBackward, "weight");
  // Linear in grad_output: d/dg = gg * backward(1), summed to g's shape (0-dim unless none).
  if (c.needs(0))
    grads[0] =
        grad_for(mul(c.grad(), call1(self_op, {ones_like(g), x, t, c.args[3], reduction})), g);
  if (!c.needs(1) && !c.needs(2)) return grads;
  Tensor common = mul(mul(c.grad(), g), mean_scale(reduction, x.sizes()));
  if (w.defined()) common = mul(common, w);
  Tensor denom = mul(x, add(neg(x), 1));
  if (c.needs(1)) {
    Tensor num = add(sub(mul(x, x), mul(mul(t, x), 2)), t);
    grads[1] = grad_for(div(mul(common, num), mul(denom, denom)), x);
  }
  if (c.needs(2)) grads[2] = grad_for(neg(div(common, denom)), t);
  return grads;
}

// ---- binary_cross_entropy_with_logits ----

std::vector<TensorMeta> bce_logits_meta(const OpArgs& a) {
  LossSetup s = bce_setup(kBceLogits, a, 0, 4, true);
  return {TensorMeta::contiguous(loss_shape(s.reduction, s.shape), s.dtype)};
}
std::vector<Tensor> bce_logits_kernel(const OpArgs& a) {
  LossSetup s = bce_setup(kBceLogits, a, 0, 4, true);
  return {kernels::binary_cross_entropy_with_logits(tensor_arg(a, 0), tensor_arg(a, 1),
                                                    optional_tensor(a, 2), optional_tensor(a, 3),
                                                    s.reduction, s.dtype)};
}
// With lw = 1 + (pw - 1) t: d/dx = s g w (sigmoid(x) lw - pw t) ... written as PyTorch 1.13's
// backward: (sigmoid(x) (pw t + 1 - t) - pw t); d/dt = s g w ((pw - 1) softplus(-x) - x).
std::vector<Tensor> bce_logits_vjp(const VjpContext& c) {
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  const Tensor &x = c.input(0), &t = c.input(1);
  const Tensor w = optional_tensor(c.args, 2), pw = optional_tensor(c.args, 3);
  const int64_t reduction = int_arg(c.args, 4);
  if (w.defined() && c.needs(static_cast<size_t>(flat_index(c.args, 2))))
    not_differentiable(kBceLogits, "weight");
  if (pw.defined() && c.needs(static_cast<size_t>(flat_index(c.args, 3))))
    not_differentiable(kBceLogits, "pos_weight");
  Tensor common = mul(c.grad(), mean_scale(reduction, x.sizes()));
  if (w.defined()) common = mul(common, w);
  if (c.needs(0)) {
    Tensor d;
    if (pw.defined()) {
      Tensor pt = mul(pw, t);
      d = sub(mul(sigmoid(x), sub(add(pt, 1), t)), pt);
    } else {
      d = sub(sigmoid(x), t);
    }
    grads[0] = grad_for(mul(d, common), x);
  }
  if (c.needs(1)) {
    Tensor d = neg(x);
    if (pw.defined()) {
      // softplus(-x) = relu(-x) + log(1 + exp(-|x|)), finite for every x.
      Tensor softplus = add(relu(neg(x)), log(add(exp(neg(abs(x))), 1)));
      d = add(d, mul(sub(pw, 1), softplus));
    }
    grads[1] = grad_for(mul(d, common), t);
  }
  return grads;
}

// ---- smooth_l1_loss / huber_loss ----

constexpr char kSmoothL1[] = "aten.smooth_l1_loss.default";
constexpr char kSmoothL1Backward[] = "aten.smooth_l1_loss_backward.default";
constexpr char kHuber[] = "aten.huber_loss.default";
constexpr char kHuberBackward[] = "aten.huber_loss_backward.default";

template <RobustLoss kKind>
constexpr const char* forward_name() {
  return kKind == RobustLoss::smooth_l1 ? kSmoothL1 : kHuber;
}
template <RobustLoss kKind>
constexpr const char* backward_name() {
  return kKind == RobustLoss::smooth_l1 ? kSmoothL1Backward : kHuberBackward;
}

// self / target at args[first], args[first + 1]; reduction and beta / delta after them.
template <RobustLoss kKind>
LossSetup robust_setup(std::string_view op, const OpArgs& a, size_t first) {
  const Tensor &self = tensor_arg(a, first), &target = tensor_arg(a, first + 1);
  check_floating(op, "self", self);
  check_floating(op, "target", target);
  const double param = float_arg(a, first + 3);
  if (kKind == RobustLoss::smooth_l1 && !(param >= 0))
    fail(op, "beta must be >= 0, got " + std::to_string(param));
  if (kKind == RobustLoss::huber && !(param > 0))
    fail(op, "delta must be > 0, got " + std::to_string(param));
  return {broadcast_checked(op, "self", self.sizes(), "target", target.sizes()),
          promote_types(self.dtype(), target.dtype()),
          checked_reduction(op, int_arg(a, first + 2))};
}

template <RobustLoss kKind>
std::vector<TensorMeta> robust_meta(const OpArgs& a) {
  LossSetup s = robust_setup<kKind>(forward_name<kKind>(), a, 0);
  return {TensorMeta::contiguous(loss_shape(s.reduction, s.shape), s.dtype)};
}
template <RobustLoss kKind>
std::vector<Tensor> robust_kernel(const OpArgs& a) {
  LossSetup s = robust_setup<kKind>(forward_name<kKind>(), a, 0);
  return {kernels::robust_loss(kKind, tensor_arg(a, 0), tensor_arg(a, 1), s.reduction,
                               float_arg(a, 3), s.dtype)};
}
template <RobustLoss kKind>
std::vector<Tensor> robust_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup(backward_name<kKind>());
  if (!c.needs(0) && !c.needs(1)) return {Tensor(), Tensor()};
  const Tensor &x = c.input(0), &t = c.input(1);
  Tensor g = call1(backward, {c.grad(), x, t, c.args[2], c.args[3]});
  return {c.needs(0) ? grad_for(g, x) : Tensor(), c.needs(1) ? grad_for(neg(g), t) : Tensor()};
}

template <RobustLoss kKind>
std::vector<TensorMeta> robust_backward_meta(const OpArgs& a) {
  constexpr const char* op = backward_name<kKind>();
  LossSetup s = robust_setup<kKind>(op, a, 1);
  check_grad_shape(op, tensor_arg(a, 0), loss_shape(s.reduction, s.shape));
  return {TensorMeta::contiguous(s.shape, s.dtype)};
}
template <RobustLoss kKind>
std::vector<Tensor> robust_backward_kernel(const OpArgs& a) {
  DType dtype = robust_backward_meta<kKind>(a)[0].dtype;
  return {kernels::robust_loss_backward(kKind, tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2),
                                        int_arg(a, 3), float_arg(a, 4), dtype)};
}
// The backward is linear in grad; inside |x - t| < param its slope in x is s g / beta
// (smooth_l1) or s g (huber), outside zero; d/dtarget is the negation.
template <RobustLoss kKind>
std::vector<Tensor> robust_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(backward_name<kKind>());
  const Tensor &g = c.input(0), &x = c.input(1), &t = c.input(2);
  const int64_t reduction = int_arg(c.args, 3);
  const double param = float_arg(c.args, 4);
  Tensor gg =
      c.needs(0)
          ? grad_for(mul(c.grad(), call1(self_op, {ones_like(g), x, t, reduction, param})), g)
          : Tensor();
  if (!c.needs(1) && !c.needs(2)) return {gg, Tensor(), Tensor()};
  double slope = mean_scale(reduction, broadcast_shapes(x.sizes(), t.sizes()));
  if (kKind == RobustLoss::smooth_l1) slope = param > 0 ? slope / param : 0.0;
  Tensor inside = lt(abs(sub(x, t)), param);
  Tensor d = where(inside, mul(mul(c.grad(), g), slope), zeros({}, c.grad().dtype()));
  return {gg, c.needs(1) ? grad_for(d, x) : Tensor(), c.needs(2) ? grad_for(neg(d), t) : Tensor()};
}

constexpr SaveMask kInput0{.inputs = bit(0)};
constexpr SaveMask kInputs01{.inputs = bit(0) | bit(1)};
constexpr SaveMask kSecondInput{.inputs = bit(1)};
constexpr SaveMask kOutput0{.outputs = bit(0)};
constexpr SaveMask kLossInputs{.inputs = bit(0) | bit(1) | bit(2) | bit(3)};
constexpr SaveMask kLossBackwardInputs{.inputs = bit(0) | bit(1) | bit(2) | bit(3)};
constexpr SaveMask kRobustBackwardInputs{.inputs = bit(0) | bit(1) | bit(2)};

// clang-format off
const OpDef kRows[] = {
  {.name = kLeakyRelu,
   .schema = "leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor",
   .meta = leaky_relu_meta, .kernel = leaky_relu_kernel, .vjp = leaky_relu_vjp,
   .saves = kInput0},
  {.name = kLeakyReluBackward,
   .schema = "leaky_relu_backward(Tensor grad_output, Tensor self, Scalar negative_slope, "
             "bool self_is_result) -> Tensor",
   .meta = leaky_relu_backward_meta, .kernel = leaky_relu_backward_kernel,
   .vjp = leaky_relu_backward_vjp, .saves = kSecondInput},
  {.name = kLeakyRelu_,
   .schema = "leaky_relu_(Tensor(a!) self, Scalar negative_slope=0.01) -> Tensor(a!)",
   .meta = leaky_relu__meta, .kernel = leaky_relu__kernel, .vjp = leaky_relu__vjp,
   .saves = kOutput0, .recompute = Recompute::effectful, .functional_variant = kLeakyRelu},
  {.name = kBce,
   .schema = "binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, "
             "int reduction=1) -> Tensor",
   .meta = bce_meta, .kernel = bce_kernel, .vjp = bce_vjp, .saves = kLossInputs,
   .recompute = Recompute::reduction},
  {.name = kBceBackward,
   .schema = "binary_cross_entropy_backward(Tensor grad_output, Tensor self, Tensor target, "
             "Tensor? weight=None, int reduction=1) -> Tensor",
   .meta = bce_backward_meta, .kernel = bce_backward_kernel, .vjp = bce_backward_vjp,
   .saves = kLossBackwardInputs},
  {.name = kBceLogits,
   .schema = "binary_cross_entropy_with_logits(Tensor self, Tensor target, Tensor? weight=None, "
             "Tensor? pos_weight=None, int reduction=1) -> Tensor",
   .meta = bce_logits_meta, .kernel = bce_logits_kernel, .vjp = bce_logits_vjp,
   .saves = kLossInputs, .recompute = Recompute::reduction},
  {.name = kSmoothL1,
   .schema = "smooth_l1_loss(Tensor self, Tensor target, int reduction=1, float beta=1.0) "
             "-> Tensor",
   .meta = robust_meta<RobustLoss::smooth_l1>, .kernel = robust_kernel<RobustLoss::smooth_l1>,
   .vjp = robust_vjp<RobustLoss::smooth_l1>, .saves = kInputs01,
   .recompute = Recompute::reduction},
  {.name = kSmoothL1Backward,
   .schema = "smooth_l1_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
             "int reduction, float beta) -> Tensor",
   .meta = robust_backward_meta<RobustLoss::smooth_l1>,
   .kernel = robust_backward_kernel<RobustLoss::smooth_l1>,
   .vjp = robust_backward_vjp<RobustLoss::smooth_l1>, .saves = kRobustBackwardInputs},
  {.name = kHuber,
   .schema = "huber_loss(Tensor self, Tensor target, int reduction=1, float delta=1.0) -> Tensor",
   .meta = robust_meta<RobustLoss::huber>, .kernel = robust_kernel<RobustLoss::huber>,
   .vjp = robust_vjp<RobustLoss::huber>, .saves = kInputs01, .recompute = Recompute::reduction},
  {.name = kHuberBackward,
   .schema = "huber_loss_backward(Tensor grad_output, Tensor self, Tensor target, "
             "int reduction, float delta) -> Tensor",
   .meta = robust_backward_meta<RobustLoss::huber>,
   .kernel = robust_backward_kernel<RobustLoss::huber>,
   .vjp = robust_backward_vjp<RobustLoss::huber>, .saves = kRobustBackwardInputs},
};
// clang-format on

}  // namespace

std::span<const OpDef> nn_extra_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

namespace {

// "mean" / "sum" / "none" -> ATen's reduction code.
int64_t reduction_code(const char* op, const std::string& reduction) {
  if (reduction == "none") return kernels::kReductionNone;
  if (reduction == "mean") return kernels::kReductionMean;
  if (reduction == "sum") return kernels::kReductionSum;
  throw std::invalid_argument(std::string(op) +
                              ": reduction must be \"mean\", \"sum\" or \"none\", got \"" +
                              reduction + "\"");
}

}  // namespace

Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  static const ops::OpDef& def = ops::lookup("aten.leaky_relu.default");
  return ops::call1(def, {self, negative_slope});
}

Tensor& leaky_relu_(Tensor& self, const Scalar& negative_slope) {
  static const ops::OpDef& def = ops::lookup("aten.leaky_relu_.default");
  ops::dispatch(def, {self, negative_slope});
  return self;
}

Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight,
                            const std::string& reduction) {
  static const ops::OpDef& def = ops::lookup("aten.binary_cross_entropy.default");
  return ops::call1(def, {self, target, ops::optional_arg(weight),
                          reduction_code("binary_cross_entropy", reduction)});
}

Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        const std::string& reduction) {
  static const ops::OpDef& def = ops::lookup("aten.binary_cross_entropy_with_logits.default");
  return ops::call1(def, {self, target, ops::optional_arg(weight), ops::optional_arg(pos_weight),
                          reduction_code("binary_cross_entropy_with_logits", reduction)});
}

Tensor smooth_l1_loss(const Tensor& self, const Tensor& target, const std::string& reduction,
                      double beta) {
  static const ops::OpDef& def = ops::lookup("aten.smooth_l1_loss.default");
  return ops::call1(def, {self, target, reduction_code("smooth_l1_loss", reduction), beta});
}

Tensor huber_loss(const Tensor& self, const Tensor& target, const std::string& reduction,
                  double delta) {
  static const ops::OpDef& def = ops::lookup("aten.huber_loss.default");
  return ops::call1(def, {self, target, reduction_code("huber_loss", reduction), delta});
}

Tensor l1_loss(const Tensor& self, const Tensor& target, const std::string& reduction) {
  const int64_t code = reduction_code("l1_loss", reduction);
  Tensor loss = abs(sub(self, target));
  if (code == kernels::kReductionMean) return mean(loss);
  if (code == kernels::kReductionSum) return sum(loss);
  return loss;
}

Tensor feature_dropout(const Tensor& input, double p, bool train) {
  if (!(p >= 0 && p <= 1))
    throw std::invalid_argument(
        "feature_dropout: dropout probability has to be between 0 and 1, "
        "but got " +
        std::to_string(p));
  if (!train || p == 0) return input;
  if (input.dim() < 2)
    throw std::invalid_argument(
        "feature_dropout: expected an input of at least 2 dims [N, C, ...] (whole channels are "
        "dropped), got shape " +
        shape_to_string(input.sizes()));
  IntList noise_shape(static_cast<size_t>(input.dim()), 1);
  noise_shape[0] = input.size(0);
  noise_shape[1] = input.size(1);
  if (p == 1) return mul(input, zeros(noise_shape, input.dtype()));
  // One 0/1 draw per channel, scaled so the expectation is the input.
  Tensor keep = bernoulli(zeros(noise_shape, input.dtype()), 1 - p);
  return mul(input, div(keep, 1 - p));
}

Tensor dropout2d(const Tensor& input, double p, bool train) {
  return feature_dropout(input, p, train);
}

}  // namespace aotgrad
