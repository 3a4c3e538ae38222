// Neural-network rows: _softmax, _log_softmax and their backward, nll_loss_forward / backward,
// mse_loss / backward; and the composites softmax, log_softmax, nll_loss, cross_entropy.
//
// The backward rows exist, as in ATen, so the VJPs of the forward rows are one fused kernel each
// (and one node in a traced backward graph). Their own VJPs (double backward, derivatives.yaml's
// formulas) are written with differentiable ops, so create_graph records them too.
#include "kernels/nn.h"

#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "ops/families.h"
#include "ops/row_helpers.h"
#include "tensor/iter.h"

namespace aotgrad::ops {
namespace {

void check_floating(const char* op, const char* arg, const Tensor& t) {
  if (!is_floating(t.dtype()))
    throw std::invalid_argument(std::string(op) + ": expected '" + arg + "' to be floating, got " +
                                std::string(dtype_name(t.dtype())) + "; convert it with .to(f32)");
}

int64_t checked_reduction(const char* op, int64_t r) {
  if (r < kernels::kReductionNone || r > kernels::kReductionSum)
    throw std::invalid_argument(std::string(op) +
                                ": reduction must be 0 (none), 1 (mean) or 2 "
                                "(sum), got " +
                                std::to_string(r));
  return r;
}

// Number of gradients a VJP returns: one per Tensor argument (an absent `Tensor?` takes none).
size_t tensor_arg_count(const OpArgs& args) {
  size_t n = 0;
  for (const Arg& a : args) n += std::holds_alternative<Tensor>(a) ? 1 : 0;
  return n;
}

// ---- softmax / log_softmax ----

DType softmax_out_dtype(const char* op, const Tensor& self, bool half_to_float) {
  check_floating(op, "self", self);
  if (!half_to_float) return self.dtype();
  if (self.dtype() != DType::f16 && self.dtype() != DType::bf16)
    throw std::invalid_argument(std::string(op) +
                                ": half_to_float needs an f16 or bf16 input, "
                                "got " +
                                std::string(dtype_name(self.dtype())) +
                                "; pass half_to_float=false");
  return DType::f32;
}

template <bool kLog>
std::vector<TensorMeta> softmax_meta(const OpArgs& a) {
  const char* op = kLog ? "_log_softmax" : "_softmax";
  const Tensor& self = tensor_arg(a, 0);
  wrap_dim(int_arg(a, 1), self.dim(), (std::string(op) + ": dim").c_str());
  return {TensorMeta::contiguous(self.sizes(), softmax_out_dtype(op, self, bool_arg(a, 2)))};
}
template <bool kLog>
std::vector<Tensor> softmax_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  DType out = softmax_meta<kLog>(a)[0].dtype;
  return {kernels::softmax(self, wrap_dim(int_arg(a, 1), self.dim()), kLog, out)};
}

Tensor softmax_backward_data(bool log, const Tensor& grad, const Tensor& output, int64_t dim,
                             DType input_dtype) {
  static const OpDef& soft = lookup("aten._softmax_backward_data.default");
  static const OpDef& log_soft = lookup("aten._log_softmax_backward_data.default");
  return call1(log ? log_soft : soft, {grad, output, dim, input_dtype});
}

template <bool kLog>
std::vector<Tensor> softmax_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {
      softmax_backward_data(kLog, c.grad(), c.output(), int_arg(c.args, 1), c.input(0).dtype())};
}

template <bool kLog>
std::vector<TensorMeta> softmax_backward_meta(const OpArgs& a) {
  const char* op = kLog ? "_log_softmax_backward_data" : "_softmax_backward_data";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& output = tensor_arg(a, 1);
  if (grad.sizes() != output.sizes() || grad.dtype() != output.dtype())
    throw std::invalid_argument(std::string(op) + ": grad_output " + shape_to_string(grad.sizes()) +
                                " " + std::string(dtype_name(grad.dtype())) +
                                " must match output " + shape_to_string(output.sizes()) + " " +
                                std::string(dtype_name(output.dtype())));
  check_floating(op, "grad_output", grad);
  wrap_dim(int_arg(a, 2), grad.dim(), (std::string(op) + ": dim").c_str());
  DType input_dtype = dtype_arg(a, 3);
  if (!is_floating(input_dtype))
    throw std::invalid_argument(std::string(op) + ": input_dtype must be floating, got " +
                                std::string(dtype_name(input_dtype)));
  return {TensorMeta::contiguous(grad.sizes(), input_dtype)};
}
template <bool kLog>
std::vector<Tensor> softmax_backward_kernel(const OpArgs& a) {
  softmax_backward_meta<kLog>(a);
  const Tensor& grad = tensor_arg(a, 0);
  return {kernels::softmax_backward(grad, tensor_arg(a, 1), wrap_dim(int_arg(a, 2), grad.dim()),
                                    kLog, dtype_arg(a, 3))};
}

// Softmax's backward, gi = y * (g - sum_d(g * y)), is self-adjoint in g: d/dg is the same
// backward applied to the incoming gg. d/dy = gg * g - gg * sum_d(g * y) - g * sum_d(gg * y).
// Log-softmax's, gi = g - exp(y) * sum_d(g): d/dg = gg - sum_d(gg * exp(y)),
// d/dy = -gg * exp(y) * sum_d(g). Results in the saved operands' dtypes (input_dtype may differ
// under half_to_float).
template <bool kLog>
std::vector<Tensor> softmax_backward_vjp(const VjpContext& c) {
  const Tensor &g = c.input(0), &y = c.input(1);
  const Tensor gg = cast_like(c.grad(), y);
  const IntList dim{wrap_dim(int_arg(c.args, 2), y.dim())};
  std::vector<Tensor> grads(2);
  if (kLog) {
    const Tensor p = exp(y);
    if (c.needs(0)) grads[0] = cast_like(sub(gg, sum(mul(gg, p), dim, true)), g);
    if (c.needs(1)) grads[1] = cast_like(neg(mul(mul(gg, p), sum(g, dim, true))), y);
    return grads;
  }
  if (c.needs(0)) grads[0] = cast_like(softmax_backward_data(false, gg, y, dim[0], y.dtype()), g);
  if (c.needs(1)) {
    Tensor d = sub(mul(gg, g), mul(gg, sum(mul(g, y), dim, true)));
    grads[1] = cast_like(sub(d, mul(g, sum(mul(gg, y), dim, true))), y);
  }
  return grads;
}

// ---- nll_loss ----

void check_nll_args(const char* op, const Tensor& self, const Tensor& target,
                    const Tensor& weight) {
  check_floating(op, "self", self);
  if (self.dim() < 1 || self.dim() > 2)
    throw std::invalid_argument(std::string(op) +
                                ": 'self' must be [N, C] or [C] log-probabilities, "
                                "got shape " +
                                shape_to_string(self.sizes()) +
                                "; nll_loss() reshapes [N, C, d1, ...] inputs for you");
  if (target.dtype() != DType::i64)
    throw std::invalid_argument(std::string(op) + ": 'target' must hold i64 class indices, got " +
                                std::string(dtype_name(target.dtype())) +
                                "; convert with .to(i64)");
  const bool ok =
      self.dim() == 2 ? target.dim() == 1 && target.size(0) == self.size(0) : target.dim() == 0;
  if (!ok)
    throw std::invalid_argument(std::string(op) + ": 'target' of shape " +
                                shape_to_string(target.sizes()) +
                                " does not match 'self' of shape " + shape_to_string(self.sizes()) +
                                " (expected [N] for [N, C] input, [] for [C] input)");
  if (weight.defined() &&
      (weight.dim() != 1 || weight.size(0) != self.size(-1) || weight.dtype() != self.dtype()))
    throw std::invalid_argument(
        std::string(op) + ": 'weight' must be a " + std::string(dtype_name(self.dtype())) +
        " tensor of shape [" + std::to_string(self.size(-1)) + "] (one weight per class), got " +
        shape_to_string(weight.sizes()) + " " + std::string(dtype_name(weight.dtype())));
}

std::vector<TensorMeta> nll_loss_forward_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& target = tensor_arg(a, 1);
  check_nll_args("nll_loss_forward", self, target, optional_tensor(a, 2));
  int64_t reduction = checked_reduction("nll_loss_forward", int_arg(a, 3));
  IntList out = reduction == kernels::kReductionNone ? target.sizes() : IntList{};
  return {TensorMeta::contiguous(out, self.dtype()), TensorMeta::contiguous({}, self.dtype())};
}
std::vector<Tensor> nll_loss_forward_kernel(const OpArgs& a) {
  nll_loss_forward_meta(a);
  auto [out, total_weight] = kernels::nll_loss_forward(
      tensor_arg(a, 0), tensor_arg(a, 1), optional_tensor(a, 2), int_arg(a, 3), int_arg(a, 4));
  return {out, total_weight};
}
// Only `self` gets a gradient: target is integral and, as in PyTorch, weight is not
// differentiated.
std::vector<Tensor> nll_loss_forward_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.nll_loss_backward.default");
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  if (c.needs(0) && c.grad(0).defined()) {
    grads[0] = call1(backward, {c.grad(0), c.input(0), c.input(1), c.args[2], c.args[3], c.args[4],
                                c.output(1)});
  }
  return grads;
}

std::vector<TensorMeta> nll_loss_backward_meta(const OpArgs& a) {
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& self = tensor_arg(a, 1);
  check_nll_args("nll_loss_backward", self, tensor_arg(a, 2), optional_tensor(a, 3));
  int64_t reduction = checked_reduction("nll_loss_backward", int_arg(a, 4));
  IntList expected = reduction == kernels::kReductionNone ? tensor_arg(a, 2).sizes() : IntList{};
  if (grad.sizes() != expected)
    throw std::invalid_argument("nll_loss_backward: grad_output has shape " +
                                shape_to_string(grad.sizes()) + ", expected " +
                                shape_to_string(expected));
  check_floating("nll_loss_backward", "grad_output", grad);
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> nll_loss_backward_kernel(const OpArgs& a) {
  nll_loss_backward_meta(a);
  return {kernels::nll_loss_backward(tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2),
                                     optional_tensor(a, 3), int_arg(a, 4), int_arg(a, 5),
                                     tensor_arg(a, 6))};
}

// nll_loss_backward is linear in grad_output: d/dgrad_output is nll_loss of the incoming gradient
// with the same target, weight and reduction (mean divides by the same total weight). self is
// read for its shape only; target, weight and total_weight are not differentiated (PyTorch).
std::vector<Tensor> nll_loss_backward_vjp(const VjpContext& c) {
  static const OpDef& forward = lookup("aten.nll_loss_forward.default");
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  if (c.needs(0) && c.grad().defined())
    grads[0] = cast_like(dispatch(forward, {cast_like(c.grad(), c.input(1)), c.input(2), c.args[3],
                                            c.args[4], c.args[5]})
                             .at(0),
                         c.input(0));
  return grads;
}

// ---- mse_loss ----

// {broadcast shape, promoted dtype} of self and target.
std::pair<IntList, DType> mse_geometry(const char* op, const Tensor& self, const Tensor& target) {
  check_floating(op, "self", self);
  check_floating(op, "target", target);
  return {broadcast_shapes(self.sizes(), target.sizes()),
          promote_types(self.dtype(), target.dtype())};
}

std::vector<TensorMeta> mse_loss_meta(const OpArgs& a) {
  auto [shape, dtype] = mse_geometry("mse_loss", tensor_arg(a, 0), tensor_arg(a, 1));
  int64_t reduction = checked_reduction("mse_loss", int_arg(a, 2));
  return {TensorMeta::contiguous(reduction == kernels::kReductionNone ? shape : IntList{}, dtype)};
}
std::vector<Tensor> mse_loss_kernel(const OpArgs& a) {
  DType dtype = mse_loss_meta(a)[0].dtype;
  return {kernels::mse_loss(tensor_arg(a, 0), tensor_arg(a, 1), int_arg(a, 2), dtype)};
}
std::vector<Tensor> mse_loss_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.mse_loss_backward.default");
  if (!c.needs(0) && !c.needs(1)) return {Tensor(), Tensor()};
  const Tensor& self = c.input(0);
  const Tensor& target = c.input(1);
  Tensor g = call1(backward, {c.grad(), self, target, c.args[2]});
  Tensor gs = c.needs(0) ? cast_like(sum_to_size(g, self.sizes()), self) : Tensor();
  Tensor gt = c.needs(1) ? cast_like(sum_to_size(neg(g), target.sizes()), target) : Tensor();
  return {gs, gt};
}

std::vector<TensorMeta> mse_loss_backward_meta(const OpArgs& a) {
  const Tensor& grad = tensor_arg(a, 0);
  auto [shape, dtype] = mse_geometry("mse_loss_backward", tensor_arg(a, 1), tensor_arg(a, 2));
  int64_t reduction = checked_reduction("mse_loss_backward", int_arg(a, 3));
  IntList expected = reduction == kernels::kReductionNone ? shape : IntList{};
  if (grad.sizes() != expected)
    throw std::invalid_argument("mse_loss_backward: grad_output has shape " +
                                shape_to_string(grad.sizes()) + ", expected " +
                                shape_to_string(expected));
  return {TensorMeta::contiguous(shape, dtype)};
}
std::vector<Tensor> mse_loss_backward_kernel(const OpArgs& a) {
  DType dtype = mse_loss_backward_meta(a)[0].dtype;
  return {kernels::mse_loss_backward(tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2),
                                     int_arg(a, 3), dtype)};
}

// mse_loss_backward, gi = k * (self - target) * grad_output with k = 2 (2 / numel for mean),
// broadcast to the common shape. d/dgrad_output sums gg * k * (self - target) back to
// grad_output's shape (a scalar when reduced); d/dself = k * gg * grad_output summed to self's
// shape, d/dtarget its negation summed to target's.
std::vector<Tensor> mse_loss_backward_vjp(const VjpContext& c) {
  const Tensor &g = c.input(0), &self = c.input(1), &target = c.input(2);
  const Tensor& gg = c.grad();
  std::vector<Tensor> grads(3);
  if (!gg.defined()) return grads;
  const int64_t reduction = int_arg(c.args, 3);
  const double k = reduction == kernels::kReductionMean && gg.numel() > 0
                       ? 2.0 / static_cast<double>(gg.numel())
                       : 2.0;
  if (c.needs(0)) {
    Tensor d = mul(mul(gg, sub(self, target)), k);
    grads[0] =
        cast_like(reduction == kernels::kReductionNone ? sum_to_size(d, g.sizes()) : sum(d), g);
  }
  if (c.needs(1) || c.needs(2)) {
    Tensor d = mul(mul(gg, g), k);
    if (c.needs(1)) grads[1] = cast_like(sum_to_size(d, self.sizes()), self);
    if (c.needs(2)) grads[2] = cast_like(sum_to_size(neg(d), target.sizes()), target);
  }
  return grads;
}

// "mean" / "sum" / "none" -> ATen's reduction code.
int64_t reduction_code(const char* op, const std::string& reduction) {
  if (reduction == "none") return kernels::kReductionNone;
  if (reduction == "mean") return kernels::kReductionMean;
  if (reduction == "sum") return kernels::kReductionSum;
  throw std::invalid_argument(std::string(op) +
                              ": reduction must be \"mean\", \"sum\" or "
                              "\"none\", got \"" +
                              reduction + "\"");
}

const OpDef kRows[] = {
    {.name = "aten._softmax.default",
     .schema = "_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
     .meta = softmax_meta<false>,
     .kernel = softmax_kernel<false>,
     .vjp = softmax_vjp<false>,
     .saves = {.outputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten._log_softmax.default",
     .schema = "_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor",
     .meta = softmax_meta<true>,
     .kernel = softmax_kernel<true>,
     .vjp = softmax_vjp<true>,
     .saves = {.outputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten._softmax_backward_data.default",
     .schema = "_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
               "ScalarType input_dtype) -> Tensor",
     .meta = softmax_backward_meta<false>,
     .kernel = softmax_backward_kernel<false>,
     .vjp = softmax_backward_vjp<false>,
     .saves = {.inputs = bit(0) | bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten._log_softmax_backward_data.default",
     .schema = "_log_softmax_backward_data(Tensor grad_output, Tensor output, int dim, "
               "ScalarType input_dtype) -> Tensor",
     .meta = softmax_backward_meta<true>,
     .kernel = softmax_backward_kernel<true>,
     .vjp = softmax_backward_vjp<true>,
     .saves = {.inputs = bit(0) | bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten.nll_loss_forward.default",
     .schema = "nll_loss_forward(Tensor self, Tensor target, Tensor? weight, int reduction, "
               "SymInt ignore_index) -> (Tensor output, Tensor total_weight)",
     .meta = nll_loss_forward_meta,
     .kernel = nll_loss_forward_kernel,
     .vjp = nll_loss_forward_vjp,
     // self is read only for its shape, but eager autograd cannot dispatch a data-less tensor;
     // in cross_entropy it is log_softmax's saved output anyway, so saving costs nothing extra.
     .saves = {.inputs = bit(0) | bit(1) | bit(2), .outputs = bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten.nll_loss_backward.default",
     .schema = "nll_loss_backward(Tensor grad_output, Tensor self, Tensor target, Tensor? weight, "
               "int reduction, SymInt ignore_index, Tensor total_weight) -> Tensor",
     .meta = nll_loss_backward_meta,
     .kernel = nll_loss_backward_kernel,
     .vjp = nll_loss_backward_vjp,
     .saves = {.inputs = bit(2) | bit(3)},
     .recompute = Recompute::reduction},
    {.name = "aten.mse_loss.default",
     .schema = "mse_loss(Tensor self, Tensor target, int reduction=1) -> Tensor",
     .meta = mse_loss_meta,
     .kernel = mse_loss_kernel,
     .vjp = mse_loss_vjp,
     .saves = {.inputs = bit(0) | bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten.mse_loss_backward.default",
     .schema = "mse_loss_backward(Tensor grad_output, Tensor self, Tensor target, int reduction) "
               "-> Tensor",
     .meta = mse_loss_backward_meta,
     .kernel = mse_loss_backward_kernel,
     .vjp = mse_loss_backward_vjp,
     .saves = {.inputs = bit(0) | bit(1) | bit(2)},
     .recompute = Recompute::pointwise},
};

}  // namespace

std::span<const OpDef> nn_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor _softmax(const Tensor& a, int64_t dim, bool half_to_float) {
  static const ops::OpDef& def = ops::lookup("aten._softmax.default");
  return ops::call1(def, {a, dim, half_to_float});
}

Tensor _log_softmax(const Tensor& a, int64_t dim, bool half_to_float) {
  static const ops::OpDef& def = ops::lookup("aten._log_softmax.default");
  return ops::call1(def, {a, dim, half_to_float});
}

Tensor softmax(const Tensor& a, int64_t dim) {
  return _softmax(a, dim, false);
}

Tensor log_softmax(const Tensor& a, int64_t dim) {
  return _log_softmax(a, dim, false);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const std::string& reduction) {
  return nll_loss(log_probs, target, reduction, Tensor(), kDefaultIgnoreIndex);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const std::string& reduction,
                const Tensor& weight, int64_t ignore_index) {
  static const ops::OpDef& def = ops::lookup("aten.nll_loss_forward.default");
  const int64_t code = ops::reduction_code("nll_loss", reduction);
  const ops::Arg w = weight.defined() ? ops::Arg(weight) : ops::Arg(std::monostate{});
  if (log_probs.dim() <= 2)
    return ops::dispatch(def, {log_probs, target, w, code, ignore_index}).at(0);
  // [N, C, d1, ...]: move the class dim last and flatten to [N * d1 * ..., C], as nll_loss2d.
  IntList expected_target{log_probs.size(0)};
  for (int64_t d = 2; d < log_probs.dim(); ++d) expected_target.push_back(log_probs.size(d));
  if (target.sizes() != expected_target)
    throw std::invalid_argument("nll_loss: target of shape " + shape_to_string(target.sizes()) +
                                " does not match input of shape " +
                                shape_to_string(log_probs.sizes()) + " (expected " +
                                shape_to_string(expected_target) + ")");
  IntList perm{0};
  for (int64_t d = 2; d < log_probs.dim(); ++d) perm.push_back(d);
  perm.push_back(1);
  const int64_t classes = log_probs.size(1);
  const int64_t rows = classes == 0 ? 0 : log_probs.numel() / classes;
  Tensor flat = reshape(permute(log_probs, perm), {rows, classes});
  Tensor flat_target = reshape(target, {numel_of(target.sizes())});
  Tensor out = ops::dispatch(def, {flat, flat_target, w, code, ignore_index}).at(0);
  return code == kernels::kReductionNone ? view(out, target.sizes()) : out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction) {
  return cross_entropy(logits, target, reduction, Tensor(), kDefaultIgnoreIndex);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const std::string& reduction,
                     const Tensor& weight, int64_t ignore_index) {
  const int64_t class_dim = logits.dim() == 1 ? 0 : 1;
  return nll_loss(log_softmax(logits, class_dim), target, reduction, weight, ignore_index);
}

Tensor mse_loss(const Tensor& a, const Tensor& b, const std::string& reduction) {
  static const ops::OpDef& def = ops::lookup("aten.mse_loss.default");
  return ops::call1(def, {a, b, ops::reduction_code("mse_loss", reduction)});
}

}  // namespace aotgrad
