// Normalization rows: native_layer_norm and its backward, native_dropout and its backward; and
// the composites layer_norm and dropout.
//
// Reading guide: each row's meta validates and computes shapes; the kernel adapter runs the meta
// and calls kernels/normalization.h. The backward rows exist, as in ATen, so a VJP is one fused
// kernel (and one node in a traced backward graph), and so graphs from PyTorch that contain them
// load. native_layer_norm_backward has no VJP; under create_graph the forward's VJP computes the
// gradients with differentiable ops instead (ops/norm_grad.h).
//
// Randomness: native_dropout draws from the calling thread's default_generator() inside its
// kernel, like rand (Recompute::random: the partitioner never replays it, the mask is saved).
// Seeding with manual_seed() before a call makes eager and compiled runs draw the same mask:
// tracing runs meta functions only, so it consumes no random numbers.
#include "kernels/normalization.h"

#include <stdexcept>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/math.h"
#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "kernels/copy.h"
#include "kernels/factory.h"
#include "ops/families.h"
#include "ops/norm_grad.h"
#include "ops/row_helpers.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

// ---- native_layer_norm ----

struct LayerNormGeometry {
  int64_t n = 1;       // elements per normalized row
  IntList stat_sizes;  // input's sizes with the normalized dims set to 1
};

LayerNormGeometry layer_norm_geometry(std::string_view op, const Tensor& input,
                                      const IntList& normalized_shape, const Tensor& weight,
                                      const Tensor& bias) {
  if (!is_floating(input.dtype()))
    fail(op, "input must be a floating tensor, got " + std::string(dtype_name(input.dtype())) +
                 "; convert it with .to(f32) first");
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  if (k == 0) fail(op, "normalized_shape must name at least one dim, got []");
  const int64_t axis = input.dim() - k;
  bool trailing_match = axis >= 0;
  for (int64_t i = 0; trailing_match && i < k; ++i)
    trailing_match = input.size(axis + i) == normalized_shape[static_cast<size_t>(i)];
  if (!trailing_match)
    fail(op, "normalized_shape " + shape_to_string(normalized_shape) +
                 " must equal the trailing sizes of input " + shape_to_string(input.sizes()));
  auto check_param = [&](const Tensor& p, const char* name) {
    if (!p.defined()) return;
    if (p.sizes() != normalized_shape || p.dtype() != input.dtype())
      fail(op, std::string(name) + " must be a " + std::string(dtype_name(input.dtype())) +
                   " tensor of shape " + shape_to_string(normalized_shape) +
                   " (normalized_shape, input's dtype), got " + std::string(dtype_name(p.dtype())) +
                   shape_to_string(p.sizes()));
  };
  check_param(weight, "weight");
  check_param(bias, "bias");
  LayerNormGeometry g;
  g.n = numel_of(normalized_shape);
  g.stat_sizes = input.sizes();
  for (int64_t i = axis; i < input.dim(); ++i) g.stat_sizes[static_cast<size_t>(i)] = 1;
  return g;
}

// mean and rstd keep full precision for 16-bit inputs (f32, as PyTorch's CUDA kernels do):
// the backward reads them, and a bf16 rstd would cost the gradient three significant digits.
DType stat_dtype(const Tensor& input) {
  return compute_dtype(input.dtype());
}

std::vector<TensorMeta> layer_norm_meta(const OpArgs& a) {
  const Tensor& input = tensor_arg(a, 0);
  LayerNormGeometry g =
      layer_norm_geometry("aten.native_layer_norm.default", input, int_list_arg(a, 1),
                          optional_tensor(a, 2), optional_tensor(a, 3));
  return {TensorMeta::contiguous(input.sizes(), input.dtype()),
          TensorMeta::contiguous(g.stat_sizes, stat_dtype(input)),
          TensorMeta::contiguous(g.stat_sizes, stat_dtype(input))};
}
std::vector<Tensor> layer_norm_kernel(const OpArgs& a) {
  layer_norm_meta(a);
  const Tensor& input = tensor_arg(a, 0);
  LayerNormGeometry g = layer_norm_geometry("native_layer_norm", input, int_list_arg(a, 1),
                                            optional_tensor(a, 2), optional_tensor(a, 3));
  kernels::LayerNormResult r =
      kernels::layer_norm(input, g.n, optional_tensor(a, 2), optional_tensor(a, 3), float_arg(a, 4),
                          g.stat_sizes, stat_dtype(input));
  return {r.out, r.mean, r.rstd};
}

}  // namespace

bool recording_backward(std::initializer_list<Tensor> tensors) {
  if (!autograd::grad_mode_enabled()) return false;
  for (const Tensor& t : tensors)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// xhat = (x - mean) * rstd, g_hat = grad * weight:
//   d/dx = rstd * (g_hat - mean(g_hat) - xhat * mean(g_hat * xhat))   (statistics of x)
//   d/dx = rstd * g_hat                                                (constant statistics)
//   d/dweight = sum(grad * xhat), d/dbias = sum(grad), over `param_dims`.
NormGrads differentiable_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                       const IntList& weight_sizes, const NormStatistics& stats,
                                       std::array<bool, 3> mask) {
  const bool batch_stats = !stats.mean.defined();
  const Tensor mu = batch_stats ? mean(x, stats.dims, true) : stats.mean;
  const Tensor centered = sub(x, mu);
  const Tensor var = batch_stats ? mean(mul(centered, centered), stats.dims, true) : stats.var;
  const Tensor rstd = rsqrt(add(var, stats.eps));
  const Tensor xhat = mul(centered, rstd);
  // The weight / bias reduction (none when x has no dims besides the parameters').
  auto reduce = [&](const Tensor& t) {
    Tensor r = stats.param_dims.empty() ? t : sum(t, stats.param_dims);
    return reshape(r, weight_sizes);
  };
  NormGrads r;
  if (mask[0]) {
    const Tensor g_hat = weight.defined() ? mul(grad, weight) : grad;
    if (batch_stats) {
      const Tensor centered_g = sub(g_hat, mean(g_hat, stats.dims, true));
      r.input = mul(rstd, sub(centered_g, mul(xhat, mean(mul(g_hat, xhat), stats.dims, true))));
    } else {
      r.input = mul(rstd, g_hat);
    }
    r.input = cast_like(r.input, x);
  }
  if (mask[1]) r.weight = reduce(mul(grad, xhat));
  if (mask[2]) r.bias = reduce(grad);
  return r;
}

namespace {

const OpDef& layer_norm_backward_op() {
  static const OpDef& def = lookup("aten.native_layer_norm_backward.default");
  return def;
}

// One gradient per Tensor argument present: input, then weight and bias when given. bias is
// passed to the backward as None: its gradient needs only grad_out, and leaving it out means
// eager autograd need not keep the bias alive (the backward row sizes grad_bias from
// normalized_shape).
std::vector<Tensor> layer_norm_vjp(const VjpContext& c) {
  const bool has_weight = !is_none(c.args, 2), has_bias = !is_none(c.args, 3);
  const size_t weight_slot = 1, bias_slot = has_weight ? 2 : 1;
  std::vector<Tensor> grads(1 + (has_weight ? 1 : 0) + (has_bias ? 1 : 0));
  if (!c.grad(0).defined()) return grads;
  const bool want_weight = has_weight && c.needs(weight_slot);
  const bool want_bias = has_bias && c.needs(bias_slot);
  if (!c.needs(0) && !want_weight && !want_bias) return grads;
  const Tensor weight = has_weight ? c.input(2) : Tensor();
  if (recording_backward({c.grad(0), c.input(0), weight})) {
    // Double backward: the same gradients from differentiable ops (ops/norm_grad.h); the
    // statistics reduce over the normalized (trailing) dims, weight and bias over the others.
    const IntList& shape = int_list_arg(c.args, 1);
    const int64_t axis = c.input(0).dim() - static_cast<int64_t>(shape.size());
    NormStatistics stats{.eps = float_arg(c.args, 4)};
    for (int64_t d = 0; d < c.input(0).dim(); ++d)
      (d < axis ? stats.param_dims : stats.dims).push_back(d);
    NormGrads n = differentiable_norm_backward(c.grad(0), c.input(0), weight, shape, stats,
                                               {c.needs(0), want_weight, want_bias});
    if (c.needs(0)) grads[0] = n.input;
    if (want_weight) grads[weight_slot] = n.weight;
    if (want_bias) grads[bias_slot] = cast_like(n.bias, c.input(3));
    return grads;
  }
  IntList mask{c.needs(0) ? 1 : 0, want_weight ? 1 : 0, want_bias ? 1 : 0};
  std::vector<Tensor> r =
      dispatch(layer_norm_backward_op(), {c.grad(0), c.input(0), c.args[1], c.output(1),
                                          c.output(2), c.args[2], std::monostate{}, mask});
  if (c.needs(0)) grads[0] = r[0];
  if (want_weight) grads[weight_slot] = r[1];
  if (want_bias) {
    const Tensor& bias = c.input(3);
    grads[bias_slot] = r[2].dtype() == bias.dtype() ? r[2] : to(r[2], bias.dtype());
  }
  return grads;
}

// ---- native_layer_norm_backward ----

// output_mask is ATen's `bool[3]`, held in OpArgs as an int[] of 0 / 1 (see ArgSchema::
// bool_elements). Entries whose mask is false come back as empty [0] tensors (ATen: undefined),
// since a graph value always has a shape.
std::array<bool, 3> output_mask_of(const OpArgs& a) {
  return output_mask_arg("aten.native_layer_norm_backward.default", a, 7,
                         "grad_input, grad_weight, grad_bias");
}

DType param_dtype(const Tensor& input, const Tensor& weight, const Tensor& bias) {
  return weight.defined() ? weight.dtype() : bias.defined() ? bias.dtype() : input.dtype();
}

std::vector<TensorMeta> layer_norm_backward_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.native_layer_norm_backward.default";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& input = tensor_arg(a, 1);
  const IntList& normalized_shape = int_list_arg(a, 2);
  const Tensor &weight = optional_tensor(a, 5), &bias = optional_tensor(a, 6);
  LayerNormGeometry g = layer_norm_geometry(op, input, normalized_shape, weight, bias);
  if (grad.sizes() != input.sizes() || grad.dtype() != input.dtype())
    fail(op, "grad_out " + std::string(dtype_name(grad.dtype())) + shape_to_string(grad.sizes()) +
                 " must match input " + std::string(dtype_name(input.dtype())) +
                 shape_to_string(input.sizes()));
  for (size_t i : {3u, 4u}) {
    const Tensor& stat = tensor_arg(a, i);
    if (stat.numel() != numel_of(g.stat_sizes) || !is_floating(stat.dtype()))
      fail(op, std::string(i == 3 ? "mean" : "rstd") + " must be a floating tensor of shape " +
                   shape_to_string(g.stat_sizes) + " (one per row), got " +
                   std::string(dtype_name(stat.dtype())) + shape_to_string(stat.sizes()));
  }
  std::array<bool, 3> mask = output_mask_of(a);
  DType pd = param_dtype(input, weight, bias);
  return {TensorMeta::contiguous(mask[0] ? input.sizes() : IntList{0}, input.dtype()),
          TensorMeta::contiguous(mask[1] ? normalized_shape : IntList{0}, pd),
          TensorMeta::contiguous(mask[2] ? normalized_shape : IntList{0}, pd)};
}
std::vector<Tensor> layer_norm_backward_kernel(const OpArgs& a) {
  layer_norm_backward_meta(a);
  const Tensor& input = tensor_arg(a, 1);
  const Tensor &weight = optional_tensor(a, 5), &bias = optional_tensor(a, 6);
  const IntList& normalized_shape = int_list_arg(a, 2);
  std::array<Tensor, 3> r =
      kernels::layer_norm_backward(tensor_arg(a, 0), input, tensor_arg(a, 3), tensor_arg(a, 4),
                                   weight, numel_of(normalized_shape), output_mask_of(a),
                                   normalized_shape, param_dtype(input, weight, bias));
  return {r[0], r[1], r[2]};
}

// ---- native_dropout ----

void check_probability(std::string_view op, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    fail(op, "dropout probability has to be between 0 and 1, but got " + std::to_string(p));
}

bool is_training(const OpArgs& a) {
  return is_none(a, 2) || bool_arg(a, 2);
}

// The factor kept elements are multiplied by (0 when everything is dropped, as ATen).
double dropout_scale(double p, bool train) {
  if (!train) return 1.0;
  return p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
}

std::vector<TensorMeta> dropout_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.native_dropout.default";
  const Tensor& input = tensor_arg(a, 0);
  if (!is_floating(input.dtype()))
    fail(op, "input must be a floating tensor, got " + std::string(dtype_name(input.dtype())));
  check_probability(op, float_arg(a, 1));
  return {TensorMeta::contiguous(input.sizes(), input.dtype()),
          TensorMeta::contiguous(input.sizes(), DType::b8)};
}
std::vector<Tensor> dropout_kernel(const OpArgs& a) {
  dropout_meta(a);
  const Tensor& input = tensor_arg(a, 0);
  if (!is_training(a))
    return {kernels::contiguous_copy(input, input.dtype()),
            kernels::full(input.sizes(), Scalar(true), DType::b8)};
  Generator& gen = default_generator();
  const uint64_t offset = gen.advance(static_cast<uint64_t>(input.numel()));
  auto [out, mask] = kernels::dropout(input, 1.0 - float_arg(a, 1), gen.seed(), offset);
  return {out, mask};
}
// PyTorch's derivative uses scale 1 when `train` is None; None means training in the forward,
// so here it scales like train=true (the gradient of what the forward computed).
std::vector<Tensor> dropout_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.native_dropout_backward.default");
  if (!c.needs(0) || !c.grad(0).defined()) return {Tensor()};
  const double scale = dropout_scale(float_arg(c.args, 1), is_training(c.args));
  return {call1(backward, {c.grad(0), c.output(1), scale})};
}

// ---- native_dropout_backward ----

std::vector<TensorMeta> dropout_backward_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.native_dropout_backward.default";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& mask = tensor_arg(a, 1);
  if (!is_floating(grad.dtype()))
    fail(op, "grad_output must be floating, got " + std::string(dtype_name(grad.dtype())));
  if (mask.dtype() != DType::b8 || mask.sizes() != grad.sizes())
    fail(op, "mask must be a b8 tensor of grad_output's shape " + shape_to_string(grad.sizes()) +
                 ", got " + std::string(dtype_name(mask.dtype())) + shape_to_string(mask.sizes()));
  return {TensorMeta::contiguous(grad.sizes(), grad.dtype())};
}
std::vector<Tensor> dropout_backward_kernel(const OpArgs& a) {
  dropout_backward_meta(a);
  return {kernels::dropout_backward(tensor_arg(a, 0), tensor_arg(a, 1), float_arg(a, 2))};
}
// Linear in grad_output: its gradient is the same masked scaling.
std::vector<Tensor> dropout_backward_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.native_dropout_backward.default");
  if (!c.needs(0)) return {Tensor(), Tensor()};
  return {call1(backward, {c.grad(), c.input(1), c.args[2]}), Tensor()};
}

const OpDef kRows[] = {
    {.name = "aten.native_layer_norm.default",
     .schema = "native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
               "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)",
     .meta = layer_norm_meta,
     .kernel = layer_norm_kernel,
     .vjp = layer_norm_vjp,
     .saves = {.inputs = bit(0) | bit(2), .outputs = bit(1) | bit(2)},
     .recompute = Recompute::reduction},
    {.name = "aten.native_layer_norm_backward.default",
     .schema = "native_layer_norm_backward(Tensor grad_out, Tensor input, SymInt[] "
               "normalized_shape, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, "
               "bool[3] output_mask) -> (Tensor, Tensor, Tensor)",
     .meta = layer_norm_backward_meta,
     .kernel = layer_norm_backward_kernel,
     .recompute = Recompute::reduction},
    {.name = "aten.native_dropout.default",
     .schema = "native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
     .meta = dropout_meta,
     .kernel = dropout_kernel,
     .vjp = dropout_vjp,
     .saves = {.outputs = bit(1)},
     .recompute = Recompute::random},
    {.name = "aten.native_dropout_backward.default",
     .schema = "native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
     .meta = dropout_backward_meta,
     .kernel = dropout_backward_kernel,
     .vjp = dropout_backward_vjp,
     .saves = {.inputs = bit(1)},
     .recompute = Recompute::pointwise,
     .fusion_expr = "a * b * s0"},
};

}  // namespace

std::span<const OpDef> normalization_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input,
                                                     const IntList& normalized_shape,
                                                     const Tensor& weight, const Tensor& bias,
                                                     double eps) {
  static const ops::OpDef& def = ops::lookup("aten.native_layer_norm.default");
  std::vector<Tensor> r = ops::dispatch(
      def, {input, normalized_shape, ops::optional_arg(weight), ops::optional_arg(bias), eps});
  return {r.at(0), r.at(1), r.at(2)};
}

Tensor layer_norm(const Tensor& input, const IntList& normalized_shape, const Tensor& weight,
                  const Tensor& bias, double eps) {
  return std::get<0>(native_layer_norm(input, normalized_shape, weight, bias, eps));
}

std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train) {
  static const ops::OpDef& def = ops::lookup("aten.native_dropout.default");
  std::vector<Tensor> r =
      ops::dispatch(def, {input, p, train ? ops::Arg(*train) : ops::Arg(std::monostate{})});
  return {r.at(0), r.at(1)};
}

Tensor dropout(const Tensor& input, double p, bool train) {
  ops::check_probability("dropout", p);
  if (!train || p == 0.0) return input;
  return std::get<0>(native_dropout(input, p, true));
}

}  // namespace aotgrad
