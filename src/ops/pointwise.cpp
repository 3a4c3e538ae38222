// The pointwise family: arithmetic, unary math, activations, and the activations' backward ops.
//
// Reading guide: shared meta helpers first (broadcasting, promotion, argument checks), then one
// meta / kernel / VJP trio per op, then the table kRows, then the public functions of ops.h.
// Every kernel adapter runs its meta first: the Eager interpreter calls kernels directly, so
// that is where eager calls get their argument checks, with the same messages traced calls get.
// VJPs follow PyTorch's derivatives.yaml formula for formula, so traced backward graphs read
// like PyTorch's (relu -> threshold_backward on the saved output, tanh -> tanh_backward, ...).
#include "kernels/pointwise.h"

#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "ops/families.h"
#include "tensor/iter.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

// ---- meta helpers ----

IntList broadcast_args(std::string_view op, const Tensor& a, const Tensor& b, const char* b_name) {
  try {
    return broadcast_shapes(a.sizes(), b.sizes());
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(op) + ": self " + shape_to_string(a.sizes()) + " and " +
                                b_name + " " + shape_to_string(b.sizes()) + " must broadcast (" +
                                e.what() + "); make each trailing size equal or 1");
  }
}

void check_floating(std::string_view op, const char* arg, DType t) {
  if (!is_floating(t))
    throw std::invalid_argument(std::string(op) + ": " + arg +
                                " must be a floating tensor (f32, f64, f16, bf16), got " +
                                std::string(dtype_name(t)) + "; convert it with .to(f32) first");
}

// ATen's alpha_check: alpha may not carry a higher category than the result.
void check_alpha(std::string_view op, DType result, const Scalar& alpha) {
  if (alpha.kind() == Scalar::Kind::boolean && result != DType::b8)
    throw std::invalid_argument(std::string(op) +
                                ": a boolean alpha is only supported for b8 "
                                "results; pass an integer or float alpha");
  if (alpha.is_floating() && !is_floating(result))
    throw std::invalid_argument(
        std::string(op) + ": for integral inputs (result " + std::string(dtype_name(result)) +
        ") alpha must not be a floating point number, got " + alpha.to_string());
}

void check_sub_not_bool(std::string_view op, bool self_bool, bool other_bool) {
  if (self_bool || other_bool)
    throw std::invalid_argument(std::string(op) +
                                ": subtraction with a bool tensor is not supported. To invert a "
                                "mask use logical_not; to compare two masks use ne/logical_xor");
}

void check_approximate(std::string_view op, const std::string& approximate) {
  if (approximate != "none" && approximate != "tanh")
    throw std::invalid_argument(std::string(op) +
                                ": approximate must be \"none\" or \"tanh\", got \"" + approximate +
                                "\"");
}

std::vector<TensorMeta> one(const IntList& sizes, DType dtype) {
  return {TensorMeta::contiguous(sizes, dtype)};
}

// ---- VJP helpers ----

bool is_one(const Scalar& s) {
  return s.to_double() == 1.0;
}

// The gradient for `input`'s edge: summed back over broadcast dims and cast to input's dtype,
// which is what PyTorch's engine does in validate_outputs. Skipping no-op calls keeps traced
// graphs free of identity nodes.
Tensor grad_for(const Tensor& g, const Tensor& input) {
  Tensor r = g.sizes() == input.sizes() ? g : sum_to_size(g, input.sizes());
  return r.dtype() == input.dtype() ? r : to(r, input.dtype());
}

// ---- add / sub ----

std::vector<TensorMeta> add_tensor_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &other = tensor_arg(a, 1);
  IntList sizes = broadcast_args("aten.add.Tensor", self, other, "other");
  DType dt = result_type(self, other);
  check_alpha("aten.add.Tensor", dt, scalar_arg(a, 2));
  return one(sizes, dt);
}
std::vector<Tensor> add_tensor_kernel(const OpArgs& a) {
  add_tensor_meta(a);
  return {kernels::add(tensor_arg(a, 0), tensor_arg(a, 1), scalar_arg(a, 2))};
}
std::vector<Tensor> add_tensor_vjp(const VjpContext& c) {
  const Scalar alpha = scalar_arg(c.args, 2);
  Tensor ga = c.needs(0) ? grad_for(c.grad(), c.input(0)) : Tensor();
  Tensor gb =
      c.needs(1) ? grad_for(is_one(alpha) ? c.grad() : mul(c.grad(), alpha), c.input(1)) : Tensor();
  return {ga, gb};
}

std::vector<TensorMeta> add_scalar_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  DType dt = result_type(self, scalar_arg(a, 1));
  check_alpha("aten.add.Scalar", dt, scalar_arg(a, 2));
  return one(self.sizes(), dt);
}
std::vector<Tensor> add_scalar_kernel(const OpArgs& a) {
  add_scalar_meta(a);
  return {kernels::add(tensor_arg(a, 0), scalar_arg(a, 1), scalar_arg(a, 2))};
}
// Shared by add.Scalar and sub.Scalar: the scalar term has no gradient.
std::vector<Tensor> scalar_offset_vjp(const VjpContext& c) {
  return {c.needs(0) ? grad_for(c.grad(), c.input(0)) : Tensor()};
}

std::vector<TensorMeta> sub_tensor_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &other = tensor_arg(a, 1);
  check_sub_not_bool("aten.sub.Tensor", self.dtype() == DType::b8, other.dtype() == DType::b8);
  IntList sizes = broadcast_args("aten.sub.Tensor", self, other, "other");
  DType dt = result_type(self, other);
  check_alpha("aten.sub.Tensor", dt, scalar_arg(a, 2));
  return one(sizes, dt);
}
std::vector<Tensor> sub_tensor_kernel(const OpArgs& a) {
  sub_tensor_meta(a);
  return {kernels::sub(tensor_arg(a, 0), tensor_arg(a, 1), scalar_arg(a, 2))};
}
std::vector<Tensor> sub_tensor_vjp(const VjpContext& c) {
  const Scalar alpha = scalar_arg(c.args, 2);
  Tensor ga = c.needs(0) ? grad_for(c.grad(), c.input(0)) : Tensor();
  Tensor gb;
  if (c.needs(1)) {
    Tensor neg_g = neg(c.grad());
    gb = grad_for(is_one(alpha) ? neg_g : mul(neg_g, alpha), c.input(1));
  }
  return {ga, gb};
}

std::vector<TensorMeta> sub_scalar_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Scalar other = scalar_arg(a, 1);
  check_sub_not_bool("aten.sub.Scalar", self.dtype() == DType::b8,
                     other.kind() == Scalar::Kind::boolean);
  DType dt = result_type(self, other);
  check_alpha("aten.sub.Scalar", dt, scalar_arg(a, 2));
  return one(self.sizes(), dt);
}
std::vector<Tensor> sub_scalar_kernel(const OpArgs& a) {
  sub_scalar_meta(a);
  return {kernels::sub(tensor_arg(a, 0), scalar_arg(a, 1), scalar_arg(a, 2))};
}

// ---- mul / div ----

std::vector<TensorMeta> mul_tensor_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &other = tensor_arg(a, 1);
  return one(broadcast_args("aten.mul.Tensor", self, other, "other"), result_type(self, other));
}
std::vector<Tensor> mul_tensor_kernel(const OpArgs& a) {
  mul_tensor_meta(a);
  return {kernels::mul(tensor_arg(a, 0), tensor_arg(a, 1))};
}
std::vector<Tensor> mul_tensor_vjp(const VjpContext& c) {
  Tensor ga = c.needs(0) ? grad_for(mul(c.grad(), c.input(1)), c.input(0)) : Tensor();
  Tensor gb = c.needs(1) ? grad_for(mul(c.grad(), c.input(0)), c.input(1)) : Tensor();
  return {ga, gb};
}

std::vector<TensorMeta> mul_scalar_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return one(self.sizes(), result_type(self, scalar_arg(a, 1)));
}
std::vector<Tensor> mul_scalar_kernel(const OpArgs& a) {
  mul_scalar_meta(a);
  return {kernels::mul(tensor_arg(a, 0), scalar_arg(a, 1))};
}
std::vector<Tensor> mul_scalar_vjp(const VjpContext& c) {
  return {c.needs(0) ? grad_for(mul(c.grad(), scalar_arg(c.args, 1)), c.input(0)) : Tensor()};
}

std::vector<TensorMeta> div_tensor_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &other = tensor_arg(a, 1);
  return one(broadcast_args("aten.div.Tensor", self, other, "other"),
             float_op_dtype(result_type(self, other)));
}
std::vector<Tensor> div_tensor_kernel(const OpArgs& a) {
  div_tensor_meta(a);
  return {kernels::div(tensor_arg(a, 0), tensor_arg(a, 1))};
}
std::vector<Tensor> div_tensor_vjp(const VjpContext& c) {
  const Tensor &self = c.input(0), &other = c.input(1);
  Tensor ga = c.needs(0) ? grad_for(div(c.grad(), other), self) : Tensor();
  // -grad * ((self / other) / other), as PyTorch's div_tensor_other_backward.
  Tensor gb =
      c.needs(1) ? grad_for(mul(neg(c.grad()), div(div(self, other), other)), other) : Tensor();
  return {ga, gb};
}

std::vector<TensorMeta> div_scalar_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return one(self.sizes(), float_op_dtype(result_type(self, scalar_arg(a, 1))));
}
std::vector<Tensor> div_scalar_kernel(const OpArgs& a) {
  div_scalar_meta(a);
  return {kernels::div(tensor_arg(a, 0), scalar_arg(a, 1))};
}
std::vector<Tensor> div_scalar_vjp(const VjpContext& c) {
  return {c.needs(0) ? grad_for(div(c.grad(), scalar_arg(c.args, 1)), c.input(0)) : Tensor()};
}

// ---- unary ----

std::vector<TensorMeta> neg_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dtype() == DType::b8)
    throw std::invalid_argument(
        "aten.neg.default: negation of a bool tensor is not supported; "
        "to invert a mask use logical_not");
  return one(self.sizes(), self.dtype());
}
std::vector<Tensor> neg_kernel(const OpArgs& a) {
  neg_meta(a);
  return {kernels::unary(kernels::Unary::neg, tensor_arg(a, 0))};
}
std::vector<Tensor> neg_vjp(const VjpContext& c) {
  return {neg(c.grad())};
}

// exp, log, sqrt, ...: integral inputs give the default float, as torch's unary float ops.
std::vector<TensorMeta> float_unary_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return one(self.sizes(), float_op_dtype(self.dtype()));
}
template <kernels::Unary op>
std::vector<Tensor> float_unary_kernel(const OpArgs& a) {
  return {kernels::unary(op, tensor_arg(a, 0))};
}

std::vector<Tensor> exp_vjp(const VjpContext& c) {
  return {mul(c.grad(), c.output())};
}
std::vector<Tensor> log_vjp(const VjpContext& c) {
  return {div(c.grad(), c.input(0))};
}
std::vector<Tensor> sqrt_vjp(const VjpContext& c) {
  return {div(c.grad(), mul(c.output(), 2))};
}
std::vector<Tensor> rsqrt_vjp(const VjpContext& c) {
  return {mul(mul(c.grad(), -0.5), pow(c.output(), 3))};
}
std::vector<Tensor> sin_vjp(const VjpContext& c) {
  return {mul(c.grad(), cos(c.input(0)))};
}
std::vector<Tensor> cos_vjp(const VjpContext& c) {
  return {mul(c.grad(), neg(sin(c.input(0))))};
}
// d/dx erf(x) = 2/sqrt(pi) exp(-x^2), as PyTorch's derivatives.yaml writes it.
std::vector<Tensor> erf_vjp(const VjpContext& c) {
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;  // M_2_SQRTPI
  const Tensor& x = c.input(0);
  return {mul(mul(exp(neg(mul(x, x))), kTwoOverSqrtPi), c.grad())};
}
std::vector<Tensor> tanh_vjp(const VjpContext& c) {
  static const OpDef& tanh_backward = lookup("aten.tanh_backward.default");
  return {call1(tanh_backward, {c.grad(), c.output()})};
}
std::vector<Tensor> sigmoid_vjp(const VjpContext& c) {
  static const OpDef& sigmoid_backward = lookup("aten.sigmoid_backward.default");
  return {call1(sigmoid_backward, {c.grad(), c.output()})};
}

std::vector<TensorMeta> relu_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dtype() == DType::b8)
    throw std::invalid_argument(
        "aten.relu.default: relu of a bool tensor is not supported; "
        "convert it with .to(f32) first");
  return one(self.sizes(), self.dtype());
}
std::vector<Tensor> relu_kernel(const OpArgs& a) {
  relu_meta(a);
  return {kernels::unary(kernels::Unary::relu, tensor_arg(a, 0))};
}
// Masks on the saved output (result <= 0), not the input, exactly as PyTorch does.
std::vector<Tensor> relu_vjp(const VjpContext& c) {
  static const OpDef& threshold_backward = lookup("aten.threshold_backward.default");
  return {call1(threshold_backward, {c.grad(), c.output(), Scalar(0)})};
}

std::vector<TensorMeta> gelu_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  check_floating("aten.gelu.default", "self", self.dtype());
  check_approximate("aten.gelu.default", string_arg(a, 1));
  return one(self.sizes(), self.dtype());
}
std::vector<Tensor> gelu_kernel(const OpArgs& a) {
  gelu_meta(a);
  return {kernels::gelu(tensor_arg(a, 0), string_arg(a, 1) == "tanh")};
}
std::vector<Tensor> gelu_vjp(const VjpContext& c) {
  static const OpDef& gelu_backward = lookup("aten.gelu_backward.default");
  return {call1(gelu_backward, {c.grad(), c.input(0), string_arg(c.args, 1)})};
}

std::vector<TensorMeta> pow_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Scalar e = scalar_arg(a, 1);
  DType dt = result_type(self, e);
  if (!is_floating(dt) && e.is_integral() && e.to_int() < 0)
    throw std::invalid_argument(
        "aten.pow.Tensor_Scalar: integers to negative integer powers are "
        "not allowed (self is " +
        std::string(dtype_name(self.dtype())) + ", exponent " + e.to_string() +
        "); convert self to a float first");
  return one(self.sizes(), dt);
}
std::vector<Tensor> pow_kernel(const OpArgs& a) {
  pow_meta(a);
  return {kernels::pow(tensor_arg(a, 0), scalar_arg(a, 1))};
}
// grad * (exponent * self^(exponent - 1)), as PyTorch's pow_backward.
std::vector<Tensor> pow_vjp(const VjpContext& c) {
  const Tensor& self = c.input(0);
  const double e = scalar_arg(c.args, 1).to_double();
  if (e == 0.0) return {zeros_like(self)};
  return {grad_for(mul(c.grad(), mul(pow(self, e - 1.0), e)), self)};
}

// ---- backward ops of the activations ----

template <const char* kName>
std::vector<TensorMeta> float_backward_meta(const OpArgs& a) {
  const Tensor &grad = tensor_arg(a, 0), &x = tensor_arg(a, 1);
  check_floating(kName, "grad_output", grad.dtype());
  check_floating(kName, "the saved tensor", x.dtype());
  return one(broadcast_args(kName, grad, x, "grad_output"), result_type(grad, x));
}
constexpr char kTanhBackward[] = "aten.tanh_backward.default";
constexpr char kSigmoidBackward[] = "aten.sigmoid_backward.default";
constexpr char kGeluBackward[] = "aten.gelu_backward.default";

std::vector<Tensor> tanh_backward_kernel(const OpArgs& a) {
  float_backward_meta<kTanhBackward>(a);
  return {kernels::tanh_backward(tensor_arg(a, 0), tensor_arg(a, 1))};
}
// d/dgrad: tanh_backward(gg, y); d/dy: gg * (-2 * y * grad).
std::vector<Tensor> tanh_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kTanhBackward);
  const Tensor &g = c.input(0), &y = c.input(1);
  return {c.needs(0) ? grad_for(call1(self_op, {c.grad(), y}), g) : Tensor(),
          c.needs(1) ? grad_for(mul(c.grad(), mul(mul(y, -2), g)), y) : Tensor()};
}

std::vector<Tensor> sigmoid_backward_kernel(const OpArgs& a) {
  float_backward_meta<kSigmoidBackward>(a);
  return {kernels::sigmoid_backward(tensor_arg(a, 0), tensor_arg(a, 1))};
}
// d/dgrad: sigmoid_backward(gg, y); d/dy: gg * grad * (1 - 2y).
std::vector<Tensor> sigmoid_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kSigmoidBackward);
  const Tensor &g = c.input(0), &y = c.input(1);
  return {c.needs(0) ? grad_for(call1(self_op, {c.grad(), y}), g) : Tensor(),
          c.needs(1) ? grad_for(mul(mul(c.grad(), g), add(mul(y, -2), 1)), y) : Tensor()};
}

std::vector<TensorMeta> threshold_backward_meta(const OpArgs& a) {
  const Tensor &grad = tensor_arg(a, 0), &self = tensor_arg(a, 1);
  return one(broadcast_args("aten.threshold_backward.default", grad, self, "grad_output"),
             result_type(grad, self));
}
std::vector<Tensor> threshold_backward_kernel(const OpArgs& a) {
  threshold_backward_meta(a);
  return {kernels::threshold_backward(tensor_arg(a, 0), tensor_arg(a, 1), scalar_arg(a, 2))};
}
// Linear in grad_output with the same mask; piecewise constant in self (zero gradient).
std::vector<Tensor> threshold_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup("aten.threshold_backward.default");
  const Tensor& g = c.input(0);
  Tensor gg = c.needs(0)
                  ? grad_for(call1(self_op, {c.grad(), c.input(1), scalar_arg(c.args, 2)}), g)
                  : Tensor();
  return {gg, Tensor()};
}

std::vector<TensorMeta> gelu_backward_meta(const OpArgs& a) {
  check_approximate(kGeluBackward, string_arg(a, 2));
  return float_backward_meta<kGeluBackward>(a);
}
std::vector<Tensor> gelu_backward_kernel(const OpArgs& a) {
  gelu_backward_meta(a);
  return {kernels::gelu_backward(tensor_arg(a, 0), tensor_arg(a, 1), string_arg(a, 2) == "tanh")};
}

// gelu''(x), written with ops so it records under tracing (PyTorch's gelu_double_backward).
Tensor gelu_second_derivative(const Tensor& x, const std::string& approximate) {
  constexpr double kInvSqrt2Pi = 0.39894228040143267794;
  if (approximate != "tanh") {
    // phi(x) * (2 - x^2), phi the standard normal density.
    Tensor x_sq = mul(x, x);
    Tensor pdf = mul(exp(mul(x_sq, -0.5)), kInvSqrt2Pi);
    return sub(mul(pdf, 2), mul(x_sq, pdf));
  }
  // gelu'(x) = 0.5 (1 + t) + 0.5 x (1 - t^2) h, t = tanh(k (x + kappa x^3)), h = k (1 + 3 kappa
  // x^2) gelu''(x) = (1 - t^2) (h - x t h^2 + 0.5 x h'),  h' = 6 k kappa x.
  constexpr double kBeta = 0.79788456080286535588, kKappa = 0.044715;
  Tensor x_sq = mul(x, x);
  Tensor t = tanh(mul(add(x, mul(mul(x_sq, x), kKappa)), kBeta));
  Tensor sech_sq = add(neg(mul(t, t)), 1);
  Tensor h = mul(add(mul(x_sq, 3 * kKappa), 1), kBeta);
  Tensor inner = add(sub(h, mul(mul(x, t), mul(h, h))), mul(x_sq, 3 * kKappa * kBeta));
  return mul(sech_sq, inner);
}

std::vector<Tensor> gelu_backward_vjp(const VjpContext& c) {
  static const OpDef& self_op = lookup(kGeluBackward);
  const Tensor &g = c.input(0), &x = c.input(1);
  const std::string& approximate = string_arg(c.args, 2);
  Tensor gg = c.needs(0) ? grad_for(call1(self_op, {c.grad(), x, approximate}), g) : Tensor();
  Tensor gx = c.needs(1)
                  ? grad_for(mul(mul(c.grad(), g), gelu_second_derivative(x, approximate)), x)
                  : Tensor();
  return {gg, gx};
}

constexpr SaveMask kNothing{};
constexpr SaveMask kInput0{.inputs = bit(0)};
constexpr SaveMask kInputs01{.inputs = bit(0) | bit(1)};
constexpr SaveMask kOutput0{.outputs = bit(0)};
// derivatives.yaml: self: grad * other, other: grad * self. Each input is read by the other's
// gradient only.
constexpr SaveMask kCrossInputs01{.inputs = bit(0) | bit(1), .read_by = {bit(1), bit(0)}};

const OpDef kRows[] = {
    {.name = "aten.add.Tensor",
     .schema = "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     .meta = add_tensor_meta,
     .kernel = add_tensor_kernel,
     .vjp = add_tensor_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a + s0 * b"},
    {.name = "aten.add.Scalar",
     .schema = "add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
     .meta = add_scalar_meta,
     .kernel = add_scalar_kernel,
     .vjp = scalar_offset_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a + s1 * s0"},
    {.name = "aten.sub.Tensor",
     .schema = "sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
     .meta = sub_tensor_meta,
     .kernel = sub_tensor_kernel,
     .vjp = sub_tensor_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a - s0 * b"},
    {.name = "aten.sub.Scalar",
     .schema = "sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
     .meta = sub_scalar_meta,
     .kernel = sub_scalar_kernel,
     .vjp = scalar_offset_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a - s1 * s0"},
    {.name = "aten.mul.Tensor",
     .schema = "mul.Tensor(Tensor self, Tensor other) -> Tensor",
     .meta = mul_tensor_meta,
     .kernel = mul_tensor_kernel,
     .vjp = mul_tensor_vjp,
     .saves = kCrossInputs01,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a * b"},
    {.name = "aten.mul.Scalar",
     .schema = "mul.Scalar(Tensor self, Scalar other) -> Tensor",
     .meta = mul_scalar_meta,
     .kernel = mul_scalar_kernel,
     .vjp = mul_scalar_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a * s0"},
    {.name = "aten.div.Tensor",
     .schema = "div.Tensor(Tensor self, Tensor other) -> Tensor",
     .meta = div_tensor_meta,
     .kernel = div_tensor_kernel,
     .vjp = div_tensor_vjp,
     // derivatives.yaml: self: grad / other, other: -grad * self / (other * other): self is read
     // by other's gradient only, other by both.
     .saves = {.inputs = bit(0) | bit(1), .read_by = {bit(1), 0}},
     .recompute = Recompute::pointwise,
     .fusion_expr = "a / b"},
    {.name = "aten.div.Scalar",
     .schema = "div.Scalar(Tensor self, Scalar other) -> Tensor",
     .meta = div_scalar_meta,
     .kernel = div_scalar_kernel,
     .vjp = div_scalar_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a / s0"},
    {.name = "aten.neg.default",
     .schema = "neg(Tensor self) -> Tensor",
     .meta = neg_meta,
     .kernel = neg_kernel,
     .vjp = neg_vjp,
     .saves = kNothing,
     .recompute = Recompute::pointwise,
     .fusion_expr = "-a"},
    {.name = "aten.exp.default",
     .schema = "exp(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::exp>,
     .vjp = exp_vjp,
     .saves = kOutput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::exp(a)"},
    {.name = "aten.log.default",
     .schema = "log(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::log>,
     .vjp = log_vjp,
     .saves = kInput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::log(a)"},
    {.name = "aten.sqrt.default",
     .schema = "sqrt(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::sqrt>,
     .vjp = sqrt_vjp,
     .saves = kOutput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::sqrt(a)"},
    {.name = "aten.rsqrt.default",
     .schema = "rsqrt(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::rsqrt>,
     .vjp = rsqrt_vjp,
     .saves = kOutput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "1 / std::sqrt(a)"},
    {.name = "aten.sin.default",
     .schema = "sin(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::sin>,
     .vjp = sin_vjp,
     .saves = kInput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::sin(a)"},
    {.name = "aten.cos.default",
     .schema = "cos(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::cos>,
     .vjp = cos_vjp,
     .saves = kInput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::cos(a)"},
    {.name = "aten.erf.default",
     .schema = "erf(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::erf>,
     .vjp = erf_vjp,
     .saves = kInput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::erf(a)"},
    {.name = "aten.tanh.default",
     .schema = "tanh(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::tanh>,
     .vjp = tanh_vjp,
     .saves = kOutput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::tanh(a)"},
    {.name = "aten.sigmoid.default",
     .schema = "sigmoid(Tensor self) -> Tensor",
     .meta = float_unary_meta,
     .kernel = float_unary_kernel<kernels::Unary::sigmoid>,
     .vjp = sigmoid_vjp,
     .saves = kOutput0,
     .recompute = Recompute::pointwise,
     // e / (1 + e) with e = exp(-|a|) below 0, so that a very negative input gives its tiny
     // (even subnormal) value as the eager kernel does rather than 1 / inf = 0; the compiler
     // computes the repeated exp once.
     .fusion_expr = "(a >= 0 ? 1 : std::exp(-std::abs(a))) / (1 + std::exp(-std::abs(a)))"},
    {.name = "aten.relu.default",
     .schema = "relu(Tensor self) -> Tensor",
     .meta = relu_meta,
     .kernel = relu_kernel,
     .vjp = relu_vjp,
     .saves = kOutput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a < 0 ? 0 : a"},
    // No fusion_expr (nor for gelu_backward): a fusing compiler runs the kernel. The textbook
    // formula x (1 + erf(x / sqrt 2)) / 2 that an expression would spell cancels for negative x
    // (f32: 15% off at x = -4.9, 0 where the kernel gives -4.6e-11 at x = -6.1); the kernel
    // computes that tail without cancellation (kernels/vec/math-inl.h, GeluErf).
    {.name = "aten.gelu.default",
     .schema = "gelu(Tensor self, *, str approximate='none') -> Tensor",
     .meta = gelu_meta,
     .kernel = gelu_kernel,
     .vjp = gelu_vjp,
     .saves = kInput0,
     .recompute = Recompute::pointwise},
    {.name = "aten.pow.Tensor_Scalar",
     .schema = "pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
     .meta = pow_meta,
     .kernel = pow_kernel,
     .vjp = pow_vjp,
     .saves = kInput0,
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::pow(a, s0)"},
    {.name = kTanhBackward,
     .schema = "tanh_backward(Tensor grad_output, Tensor output) -> Tensor",
     .meta = float_backward_meta<kTanhBackward>,
     .kernel = tanh_backward_kernel,
     .vjp = tanh_backward_vjp,
     .saves = kInputs01,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a * (1 - b * b)"},
    {.name = kSigmoidBackward,
     .schema = "sigmoid_backward(Tensor grad_output, Tensor output) -> Tensor",
     .meta = float_backward_meta<kSigmoidBackward>,
     .kernel = sigmoid_backward_kernel,
     .vjp = sigmoid_backward_vjp,
     .saves = kInputs01,
     .recompute = Recompute::pointwise,
     .fusion_expr = "a * (1 - b) * b"},
    {.name = "aten.threshold_backward.default",
     .schema = "threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor",
     .meta = threshold_backward_meta,
     .kernel = threshold_backward_kernel,
     .vjp = threshold_backward_vjp,
     .saves = {.inputs = bit(1)},
     .recompute = Recompute::pointwise,
     .fusion_expr = "b <= s0 ? 0 : a"},
    {.name = kGeluBackward,
     .schema =
         "gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
     .meta = gelu_backward_meta,
     .kernel = gelu_backward_kernel,
     .vjp = gelu_backward_vjp,
     .saves = kInputs01,
     .recompute = Recompute::pointwise},
};

}  // namespace

std::span<const OpDef> pointwise_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

// Each public function looks its row up once; call1 dispatches to the innermost interpreter.
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.add.Tensor");
  return ops::call1(def, {a, b, alpha});
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.add.Scalar");
  return ops::call1(def, {a, b, alpha});
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.sub.Tensor");
  return ops::call1(def, {a, b, alpha});
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.sub.Scalar");
  return ops::call1(def, {a, b, alpha});
}
Tensor mul(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.mul.Tensor");
  return ops::call1(def, {a, b});
}
Tensor mul(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.mul.Scalar");
  return ops::call1(def, {a, b});
}
Tensor div(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.div.Tensor");
  return ops::call1(def, {a, b});
}
Tensor div(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.div.Scalar");
  return ops::call1(def, {a, b});
}
Tensor neg(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.neg.default");
  return ops::call1(def, {a});
}
Tensor exp(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.exp.default");
  return ops::call1(def, {a});
}
Tensor log(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.log.default");
  return ops::call1(def, {a});
}
Tensor sqrt(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.sqrt.default");
  return ops::call1(def, {a});
}
Tensor rsqrt(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.rsqrt.default");
  return ops::call1(def, {a});
}
Tensor sin(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.sin.default");
  return ops::call1(def, {a});
}
Tensor cos(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.cos.default");
  return ops::call1(def, {a});
}
Tensor tanh(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.tanh.default");
  return ops::call1(def, {a});
}
Tensor sigmoid(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.sigmoid.default");
  return ops::call1(def, {a});
}
Tensor relu(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.relu.default");
  return ops::call1(def, {a});
}
Tensor gelu(const Tensor& a, const std::string& approximate) {
  static const ops::OpDef& def = ops::lookup("aten.gelu.default");
  return ops::call1(def, {a, approximate});
}
Tensor pow(const Tensor& a, const Scalar& exponent) {
  static const ops::OpDef& def = ops::lookup("aten.pow.Tensor_Scalar");
  return ops::call1(def, {a, exponent});
}

}  // namespace aotgrad
