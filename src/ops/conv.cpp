// Convolution and batch-normalisation rows: convolution / convolution_backward, native_batch_norm,
// _native_batch_norm_legit_functional and native_batch_norm_backward; the public conv2d and
// batch_norm composites.
//
// Running statistics. ATen's native_batch_norm updates running_mean / running_var in place in
// training, although its schema does not say so (no `(a!)`). We keep that row faithful, so
// graphs exported from PyTorch 1.13 behave as there, and mark it effectful. But a write the
// schema hides is invisible to the tracer: inside a compiled function it would be lost. So the
// public batch_norm() never asks that row to write: in training with running statistics it calls
// the functional row (PyTorch 2's _native_batch_norm_legit_functional), which returns the new
// statistics as two extra results, and copies them into the caller's tensors with copy_ under
// no_grad, an ordinary in-place op that functionalization turns into an input mutation the
// compiled function's runtime replays. Eager and compiled calls thus update the caller's
// running statistics identically.
//
// output_mask. The backward rows take ATen's `bool[3] output_mask`, held in OpArgs as an int[] of
// 0 / 1 (see ArgSchema::bool_elements). A masked-out result is an empty [0] tensor (ATen returns
// an undefined one; graph values are always tensors).
#include "aotgrad/conv.h"

#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "kernels/batch_norm.h"
#include "kernels/conv.h"
#include "kernels/copy.h"
#include "ops/conv_transpose.h"
#include "ops/families.h"
#include "ops/norm_grad.h"
#include "ops/row_helpers.h"
#include "tensor/checked_math.h"

namespace aotgrad::ops {
namespace {

// Gradients a VJP returns: one per Tensor argument (an absent `Tensor?` takes none).
size_t tensor_arg_count(const OpArgs& args) {
  size_t n = 0;
  for (const Arg& a : args) n += std::holds_alternative<Tensor>(a) ? 1 : 0;
  return n;
}

// Position of argument `arg` among the differentiable inputs, or -1 when it is None.
int flat_index(const OpArgs& args, size_t arg) {
  if (!std::holds_alternative<Tensor>(args[arg])) return -1;
  int n = 0;
  for (size_t i = 0; i < arg; ++i) n += std::holds_alternative<Tensor>(args[i]) ? 1 : 0;
  return n;
}

std::array<bool, 3> output_mask(const char* op, const OpArgs& a, size_t i) {
  return output_mask_arg(op, a, i, "grad_input, grad_weight, grad_bias");
}

TensorMeta masked_meta(bool present, const IntList& sizes, DType dtype) {
  return TensorMeta::contiguous(present ? sizes : IntList{0}, dtype);
}

Tensor masked_result(const Tensor& t, DType dtype) {
  return t.defined() ? t : make_tensor({0}, dtype);
}

// ---- convolution ----

// A stride / padding / dilation list for 2 spatial dims: one value applies to both.
std::array<int64_t, 2> spatial_pair(const char* op, const char* name, const IntList& v,
                                    int64_t min_value) {
  if (v.size() != 1 && v.size() != 2)
    fail(op, std::string(name) + " must have 1 or 2 entries for a 2-D convolution, got " +
                 shape_to_string(v));
  std::array<int64_t, 2> r{v[0], v.back()};
  for (int64_t x : r)
    if (x < min_value)
      fail(op, std::string(name) + " must be >= " + std::to_string(min_value) + ", got " +
                   shape_to_string(v));
  return r;
}

struct ConvSetup {
  kernels::Conv2dParams params;
  IntList out_sizes;
};

// Checks the operands of a 2-D convolution; args[first_list..] are stride, padding, dilation,
// transposed, output_padding, groups (the order both convolution rows share).
ConvSetup conv_setup(const char* op, const Tensor& input, const Tensor& weight, const Tensor& bias,
                     const OpArgs& a, size_t first_list) {
  if (bool_arg(a, first_list + 3))
    throw std::logic_error(std::string(op) +
                           ": transposed convolutions go to ops/conv_transpose.cpp");
  if (input.dim() != 4)
    fail(op, "expected a 4-D input [N, C, H, W] (only 2-D convolution is supported), got shape " +
                 shape_to_string(input.sizes()));
  if (weight.dim() != 4)
    fail(op, "expected a 4-D weight [out_channels, in_channels / groups, kH, kW], got shape " +
                 shape_to_string(weight.sizes()));
  if (!is_floating(input.dtype()) && input.dtype() != DType::i64)
    fail(op, "input must be floating or i64, got " + std::string(dtype_name(input.dtype())));
  for (const Tensor* t : {&weight, &bias})
    if (t->defined() && t->dtype() != input.dtype())
      fail(op, "input is " + std::string(dtype_name(input.dtype())) + " but " +
                   (t == &weight ? "weight" : "bias") + " is " +
                   std::string(dtype_name(t->dtype())) + "; convert them to one dtype");
  ConvSetup s;
  auto& p = s.params;
  p.stride = spatial_pair(op, "stride", int_list_arg(a, first_list), 1);
  p.padding = spatial_pair(op, "padding", int_list_arg(a, first_list + 1), 0);
  p.dilation = spatial_pair(op, "dilation", int_list_arg(a, first_list + 2), 1);
  p.groups = int_arg(a, first_list + 5);
  const int64_t C = input.size(1), O = weight.size(0);
  if (p.groups < 1) fail(op, "groups must be >= 1, got " + std::to_string(p.groups));
  const int64_t expected_c = saturating_mul(weight.size(1), p.groups);
  if (expected_c != C || O % p.groups != 0)
    fail(op, "weight of shape " + shape_to_string(weight.sizes()) + " with groups=" +
                 std::to_string(p.groups) + " expects " + std::to_string(expected_c) +
                 " input channels (and out_channels divisible by groups), but input of shape " +
                 shape_to_string(input.sizes()) + " has " + std::to_string(C));
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != O))
    fail(op, "bias must have shape [" + std::to_string(O) + "] (one per output channel), got " +
                 shape_to_string(bias.sizes()));
  s.out_sizes = {input.size(0), O, 0, 0};
  for (int d = 0; d < 2; ++d) {
    // Both fit int64 once checked, and so does every term of conv_output_size.
    std::optional<int64_t> pad2 = checked_mul(p.padding[d], 2);
    std::optional<int64_t> padded = pad2 ? checked_add(input.size(2 + d), *pad2) : std::nullopt;
    std::optional<int64_t> span = checked_mul(p.dilation[d], weight.size(2 + d) - 1);
    if (!padded || !span || *span == std::numeric_limits<int64_t>::max())
      fail(op, "padding " + std::to_string(p.padding[d]) + " or dilation " +
                   std::to_string(p.dilation[d]) + " along spatial dim " + std::to_string(d) +
                   " makes the padded input or the dilated kernel overflow int64; use smaller "
                   "values");
    if (*padded < *span + 1)
      fail(op, "the padded input is " + std::to_string(*padded) + " wide along spatial dim " +
                   std::to_string(d) + " but the (dilated) kernel spans " +
                   std::to_string(*span + 1) +
                   "; the kernel can't be larger than the padded input");
    s.out_sizes[2 + d] = kernels::conv_output_size(input.size(2 + d), weight.size(2 + d),
                                                   p.stride[d], p.padding[d], p.dilation[d]);
  }
  return s;
}

std::vector<TensorMeta> convolution_meta(const OpArgs& a) {
  if (bool_arg(a, 6)) return transposed_convolution_meta(a);
  const Tensor& input = tensor_arg(a, 0);
  ConvSetup s = conv_setup("convolution", input, tensor_arg(a, 1), optional_tensor(a, 2), a, 3);
  return {TensorMeta::contiguous(s.out_sizes, input.dtype())};
}

std::vector<Tensor> convolution_kernel(const OpArgs& a) {
  if (bool_arg(a, 6)) return transposed_convolution_kernel(a);
  const Tensor& input = tensor_arg(a, 0);
  const Tensor& weight = tensor_arg(a, 1);
  const Tensor bias = optional_tensor(a, 2);
  ConvSetup s = conv_setup("convolution", input, weight, bias, a, 3);
  return {kernels::conv2d(input, weight, bias, s.params)};
}

// A tensor with `t`'s sizes and dtype and no data of its own (a zero expanded to the sizes).
// convolution_backward reads the input's values only for the weight gradient and the weight's only
// for the input gradient; for a gradient nobody needs, the VJP passes this instead, so a traced
// backward does not read that forward value and the partitioner does not save it (a frozen
// convolution weight keeps the convolution's input out of the saved values, as output_mask means).
Tensor shape_only(const Tensor& t) {
  return expand(zeros({}, t.dtype()), t.sizes());
}

std::vector<Tensor> convolution_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.convolution_backward.default");
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  const Tensor bias = optional_tensor(c.args, 2);
  const int bias_index = bias.defined() ? flat_index(c.args, 2) : -1;
  const bool need_input = c.needs(0), need_weight = c.needs(1);
  const bool need_bias = bias_index >= 0 && c.needs(bias_index);
  if (!c.grad().defined() || !(need_input || need_weight || need_bias)) return grads;
  Arg bias_sizes = bias.defined() ? Arg(bias.sizes()) : Arg(std::monostate{});
  const Tensor input = need_weight ? c.input(0) : shape_only(c.input(0));
  const Tensor weight = need_input ? c.input(1) : shape_only(c.input(1));
  std::vector<Tensor> r = dispatch(
      backward, {c.grad(), input, weight, bias_sizes, c.args[3], c.args[4], c.args[5], c.args[6],
                 c.args[7], c.args[8], IntList{need_input, need_weight, need_bias}});
  if (need_input) grads[0] = r[0];
  if (need_weight) grads[1] = r[1];
  if (need_bias) grads[bias_index] = r[2];
  return grads;
}

std::vector<TensorMeta> convolution_backward_meta(const OpArgs& a) {
  if (bool_arg(a, 7)) return transposed_convolution_backward_meta(a);
  const char* op = "convolution_backward";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& input = tensor_arg(a, 1);
  const Tensor& weight = tensor_arg(a, 2);
  ConvSetup s = conv_setup(op, input, weight, Tensor(), a, 4);
  if (grad.sizes() != s.out_sizes || grad.dtype() != input.dtype())
    fail(op, "grad_output is " + std::string(dtype_name(grad.dtype())) +
                 shape_to_string(grad.sizes()) + ", expected the convolution's output " +
                 std::string(dtype_name(input.dtype())) + shape_to_string(s.out_sizes));
  const IntList bias_sizes{weight.size(0)};
  auto mask = output_mask(op, a, 10);
  // Without a bias gradient the sizes are not read: PyTorch passes [0] for a conv without bias.
  if (mask[2] && !is_none(a, 3) && int_list_arg(a, 3) != bias_sizes)
    fail(op, "bias_sizes " + shape_to_string(int_list_arg(a, 3)) + " do not match the " +
                 std::to_string(weight.size(0)) + " output channels");
  return {masked_meta(mask[0], input.sizes(), input.dtype()),
          masked_meta(mask[1], weight.sizes(), input.dtype()),
          masked_meta(mask[2], bias_sizes, input.dtype())};
}

std::vector<Tensor> convolution_backward_kernel(const OpArgs& a) {
  if (bool_arg(a, 7)) return transposed_convolution_backward_kernel(a);
  const Tensor& input = tensor_arg(a, 1);
  const Tensor& weight = tensor_arg(a, 2);
  convolution_backward_meta(a);
  ConvSetup s = conv_setup("convolution_backward", input, weight, Tensor(), a, 4);
  auto r = kernels::conv2d_backward(tensor_arg(a, 0), input, weight, s.params,
                                    output_mask("convolution_backward", a, 10));
  return {masked_result(r[0], input.dtype()), masked_result(r[1], input.dtype()),
          masked_result(r[2], input.dtype())};
}

// convolution_backward is bilinear: grad_input in (grad_output, weight), grad_weight in
// (grad_output, input), grad_bias linear in grad_output. Its VJP (PyTorch's
// _convolution_double_backward) is therefore made of the convolution and of convolution_backward
// with other operands, both rows with a VJP, so it records and can be differentiated again.
// For incoming gradients ggI, ggW, ggb of the three results:
//   d/dgrad_output = conv(ggI, weight) + conv(input, ggW) + ggb (per output channel)
//   d/dweight      = the weight gradient of conv(ggI, weight) for grad_output
//   d/dinput       = the input gradient of conv(input, ggW) for grad_output
// These are adjoint identities of any bilinear map, so transposed convolutions (the same rows
// with transposed=true) need nothing else. Masked-out results get no incoming gradient.
std::vector<Tensor> convolution_backward_vjp(const VjpContext& c) {
  static const OpDef& forward = lookup("aten.convolution.default");
  static const OpDef& backward = lookup("aten.convolution_backward.default");
  const auto mask = output_mask("convolution_backward", c.args, 10);
  auto incoming = [&](size_t i) { return mask[i] && c.grad(i).defined() ? c.grad(i) : Tensor(); };
  const Tensor ggI = incoming(0), ggW = incoming(1), ggb = incoming(2);
  const Tensor &grad_output = c.input(0), &input = c.input(1), &weight = c.input(2);
  // stride, padding, dilation, transposed, output_padding, groups: args 4..9 here, 3..8 forward.
  const OpArgs geometry(c.args.begin() + 4, c.args.begin() + 10);
  auto conv = [&](const Tensor& x, const Tensor& w) {
    OpArgs a{x, w, std::monostate{}};
    a.insert(a.end(), geometry.begin(), geometry.end());
    return call1(forward, std::move(a));
  };
  auto backward_of = [&](const Tensor& x, const Tensor& w, size_t result) {
    OpArgs a{grad_output, x, w, std::monostate{}};
    a.insert(a.end(), geometry.begin(), geometry.end());
    a.push_back(IntList{result == 0, result == 1, 0});
    return dispatch(backward, std::move(a)).at(result);
  };
  std::vector<Tensor> grads(3);
  if (c.needs(0)) {
    Tensor g;
    if (ggI.defined()) g = conv(ggI, weight);
    if (ggW.defined()) g = g.defined() ? add(g, conv(input, ggW)) : conv(input, ggW);
    if (ggb.defined()) {
      IntList per_channel(grad_output.dim(), 1);
      per_channel[1] = ggb.numel();
      Tensor b = reshape(ggb, per_channel);
      g = g.defined() ? add(g, b) : expand(b, grad_output.sizes());
    }
    grads[0] = g;
  }
  if (c.needs(1) && ggW.defined()) grads[1] = backward_of(input, ggW, 0);
  if (c.needs(2) && ggI.defined()) grads[2] = backward_of(ggI, weight, 1);
  return grads;
}

// ---- batch norm ----

struct BatchNormSetup {
  int64_t channels;
  DType stat_dtype;  // save_mean / save_invstd: the parameters' dtype (f32 for bf16 input + f32
                     // parameters, as ATen's mixed-precision CPU path)
};

BatchNormSetup batch_norm_setup(const char* op, const Tensor& input, const Tensor& weight,
                                const Tensor& bias, const Tensor& running_mean,
                                const Tensor& running_var, bool training) {
  if (input.dim() < 2)
    fail(op, "expected an input [N, C, ...] of at least 2 dims, got shape " +
                 shape_to_string(input.sizes()));
  if (!is_floating(input.dtype()))
    fail(op, "input must be floating, got " + std::string(dtype_name(input.dtype())) +
                 "; convert it with .to(f32)");
  BatchNormSetup s{input.size(1), input.dtype()};
  bool stat_set = false;
  const std::pair<const char*, const Tensor*> params[] = {{"weight", &weight},
                                                          {"bias", &bias},
                                                          {"running_mean", &running_mean},
                                                          {"running_var", &running_var}};
  for (auto [name, t] : params) {
    if (!t->defined()) continue;
    if (t->dim() != 1 || t->size(0) != s.channels || !is_floating(t->dtype()))
      fail(op, std::string(name) + " must be a floating tensor of shape [" +
                   std::to_string(s.channels) + "] (one per channel of input " +
                   shape_to_string(input.sizes()) + "), got " +
                   std::string(dtype_name(t->dtype())) + shape_to_string(t->sizes()));
    if (!stat_set) s.stat_dtype = t->dtype();
    stat_set = true;
  }
  if (!training && (!running_mean.defined() || !running_var.defined()))
    fail(op, "running_mean and running_var must be given in evaluation mode (training=false)");
  return s;
}

BatchNormSetup batch_norm_setup(const char* op, const OpArgs& a) {
  return batch_norm_setup(op, tensor_arg(a, 0), optional_tensor(a, 1), optional_tensor(a, 2),
                          optional_tensor(a, 3), optional_tensor(a, 4), bool_arg(a, 5));
}

std::vector<TensorMeta> native_batch_norm_meta(const OpArgs& a) {
  const Tensor& input = tensor_arg(a, 0);
  BatchNormSetup s = batch_norm_setup("native_batch_norm", a);
  const IntList stat_sizes{bool_arg(a, 5) ? s.channels : 0};
  return {TensorMeta::contiguous(input.sizes(), input.dtype()),
          TensorMeta::contiguous(stat_sizes, s.stat_dtype),
          TensorMeta::contiguous(stat_sizes, s.stat_dtype)};
}

kernels::BatchNormForward run_batch_norm(const char* op, const OpArgs& a) {
  BatchNormSetup s = batch_norm_setup(op, a);
  return kernels::batch_norm_forward(tensor_arg(a, 0), optional_tensor(a, 1), optional_tensor(a, 2),
                                     optional_tensor(a, 3), optional_tensor(a, 4), bool_arg(a, 5),
                                     float_arg(a, 6), float_arg(a, 7), s.stat_dtype);
}

std::vector<Tensor> native_batch_norm_kernel(const OpArgs& a) {
  kernels::BatchNormForward r = run_batch_norm("native_batch_norm", a);
  // ATen's in-place update of the running statistics (see the top of this file).
  const std::pair<Tensor, const Tensor&> updates[] = {{optional_tensor(a, 3), r.new_running_mean},
                                                      {optional_tensor(a, 4), r.new_running_var}};
  if (bool_arg(a, 5))
    for (const auto& [running, updated] : updates) {
      if (!running.defined()) continue;
      kernels::copy_into(running, updated);
      running.storage()->bump_version();
    }
  return {r.output, r.save_mean, r.save_invstd};
}

std::vector<TensorMeta> legit_functional_meta(const OpArgs& a) {
  std::vector<TensorMeta> m = native_batch_norm_meta(a);
  for (size_t i : {3, 4}) {
    const Tensor& t = tensor_arg(a, i);
    m.push_back(TensorMeta::contiguous(t.sizes(), t.dtype()));
  }
  return m;
}

std::vector<Tensor> legit_functional_kernel(const OpArgs& a) {
  kernels::BatchNormForward r = run_batch_norm("_native_batch_norm_legit_functional", a);
  return {r.output, r.save_mean, r.save_invstd, r.new_running_mean, r.new_running_var};
}

// batch_norm_vjp under create_graph: the gradients from differentiable ops (ops/norm_grad.h),
// with the batch statistics of the input in training and the running ones, constants, in eval.
std::vector<Tensor> batch_norm_double_backward(const VjpContext& c, const Arg& running_mean,
                                               const Arg& running_var, std::vector<Tensor> grads,
                                               std::array<bool, 3> mask) {
  const Tensor& input = c.input(0);
  const Tensor weight = optional_tensor(c.args, 1);
  IntList per_channel(input.dim(), 1);
  per_channel[1] = input.size(1);
  NormStatistics stats{.eps = float_arg(c.args, 7)};
  for (int64_t d = 0; d < input.dim(); ++d)
    if (d != 1) stats.dims.push_back(d);
  stats.param_dims = stats.dims;
  if (!bool_arg(c.args, 5)) {
    stats.mean = reshape(cast_like(std::get<Tensor>(running_mean), input), per_channel);
    stats.var = reshape(cast_like(std::get<Tensor>(running_var), input), per_channel);
  }
  NormGrads n = differentiable_norm_backward(
      c.grad(0), input, weight.defined() ? reshape(weight, per_channel) : Tensor(), {input.size(1)},
      stats, mask);
  if (mask[0]) grads[0] = n.input;
  if (mask[1]) grads[flat_index(c.args, 1)] = cast_like(n.weight, weight);
  if (mask[2]) grads[flat_index(c.args, 2)] = cast_like(n.bias, c.input(2));
  return grads;
}

// kFunctional: the row returns the running statistics (unchanged in eval) as results 3 and 4,
// which the eval-mode gradient reads instead of the inputs, so the inputs need not be saved
// (the caller overwrites them right after the call).
template <bool kFunctional>
std::vector<Tensor> batch_norm_vjp(const VjpContext& c) {
  static const OpDef& backward = lookup("aten.native_batch_norm_backward.default");
  std::vector<Tensor> grads(tensor_arg_count(c.args));
  const int weight_index = flat_index(c.args, 1), bias_index = flat_index(c.args, 2);
  const bool need_input = c.needs(0);
  const bool need_weight = weight_index >= 0 && c.needs(weight_index);
  const bool need_bias = bias_index >= 0 && c.needs(bias_index);
  if (!c.grad(0).defined() || !(need_input || need_weight || need_bias)) return grads;
  const bool training = bool_arg(c.args, 5);
  // Training reads only the batch statistics; unsaved running statistics must not be passed.
  Arg running_mean = std::monostate{}, running_var = std::monostate{};
  if (!training) {
    running_mean = kFunctional ? c.output(3) : c.input(3);
    running_var = kFunctional ? c.output(4) : c.input(4);
  }
  if (recording_backward({c.grad(0), c.input(0), optional_tensor(c.args, 1)}))
    return batch_norm_double_backward(c, running_mean, running_var, grads,
                                      {need_input, need_weight, need_bias});
  // In eval mode the input's values are read only for the weight gradient (the statistics are
  // constants), so without it the input need not be kept (see shape_only).
  const Tensor input = training || need_weight ? c.input(0) : shape_only(c.input(0));
  std::vector<Tensor> r = dispatch(
      backward, {c.grad(0), input, c.args[1], running_mean, running_var, c.output(1), c.output(2),
                 training, c.args[7], IntList{need_input, need_weight, need_bias}});
  if (need_input) grads[0] = r[0];
  if (need_weight) grads[weight_index] = r[1];
  if (need_bias) grads[bias_index] = r[2];
  return grads;
}

std::vector<TensorMeta> batch_norm_backward_meta(const OpArgs& a) {
  const char* op = "native_batch_norm_backward";
  const Tensor& grad = tensor_arg(a, 0);
  const Tensor& input = tensor_arg(a, 1);
  const Tensor weight = optional_tensor(a, 2);
  const bool train = bool_arg(a, 7);
  BatchNormSetup s = batch_norm_setup(op, input, weight, Tensor(), optional_tensor(a, 3),
                                      optional_tensor(a, 4), train);
  if (grad.sizes() != input.sizes())
    fail(op, "grad_out has shape " + shape_to_string(grad.sizes()) + ", expected input's " +
                 shape_to_string(input.sizes()));
  if (train) {
    for (size_t i : {5, 6}) {
      const Tensor t = optional_tensor(a, i);
      if (!t.defined() || t.sizes() != IntList{s.channels})
        fail(op, std::string(i == 5 ? "save_mean" : "save_invstd") + " must be the [" +
                     std::to_string(s.channels) +
                     "] batch statistic native_batch_norm returned in training");
    }
  }
  auto mask = output_mask(op, a, 9);
  const DType param_dtype = weight.defined() ? weight.dtype() : input.dtype();
  return {masked_meta(mask[0], input.sizes(), input.dtype()),
          masked_meta(mask[1], {s.channels}, param_dtype),
          masked_meta(mask[2], {s.channels}, param_dtype)};
}

std::vector<Tensor> batch_norm_backward_kernel(const OpArgs& a) {
  std::vector<TensorMeta> m = batch_norm_backward_meta(a);
  auto r = kernels::batch_norm_backward(
      tensor_arg(a, 0), tensor_arg(a, 1), optional_tensor(a, 2), optional_tensor(a, 3),
      optional_tensor(a, 4), optional_tensor(a, 5), optional_tensor(a, 6), bool_arg(a, 7),
      float_arg(a, 8), output_mask("native_batch_norm_backward", a, 9), m[1].dtype);
  return {masked_result(r[0], m[0].dtype), masked_result(r[1], m[1].dtype),
          masked_result(r[2], m[2].dtype)};
}

const OpDef kRows[] = {
    {.name = "aten.convolution.default",
     .schema = "convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, "
               "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
               "SymInt groups) -> Tensor",
     .meta = convolution_meta,
     .kernel = convolution_kernel,
     .vjp = convolution_vjp,
     .saves = {.inputs = bit(0) | bit(1)},
     .recompute = Recompute::compute_heavy},
    {.name = "aten.convolution_backward.default",
     .schema = "convolution_backward(Tensor grad_output, Tensor input, Tensor weight, "
               "SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, "
               "bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask) "
               "-> (Tensor, Tensor, Tensor)",
     .meta = convolution_backward_meta,
     .kernel = convolution_backward_kernel,
     .vjp = convolution_backward_vjp,
     .saves = {.inputs = bit(0) | bit(1) | bit(2)},
     .recompute = Recompute::compute_heavy},
    {.name = "aten.native_batch_norm.default",
     .schema = "native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, "
               "Tensor? running_mean, Tensor? running_var, bool training, float momentum, "
               "float eps) -> (Tensor, Tensor, Tensor)",
     .meta = native_batch_norm_meta,
     .kernel = native_batch_norm_kernel,
     .vjp = batch_norm_vjp<false>,
     // The running statistics are read by the eval-mode gradient.
     .saves = {.inputs = bit(0) | bit(1) | bit(3) | bit(4), .outputs = bit(1) | bit(2)},
     // May write the running statistics (see the top of this file): never recompute it.
     .recompute = Recompute::effectful},
    {.name = "aten._native_batch_norm_legit_functional.default",
     .schema = "_native_batch_norm_legit_functional(Tensor input, Tensor? weight, Tensor? bias, "
               "Tensor running_mean, Tensor running_var, bool training, float momentum, "
               "float eps) -> (Tensor, Tensor, Tensor, Tensor running_mean_out, "
               "Tensor running_var_out)",
     .meta = legit_functional_meta,
     .kernel = legit_functional_kernel,
     .vjp = batch_norm_vjp<true>,
     .saves = {.inputs = bit(0) | bit(1), .outputs = bit(1) | bit(2) | bit(3) | bit(4)},
     // Not recomputed in the backward (PyTorch's partitioner also counts batch norm as
     // compute-intensive): a recomputation would read the running statistics, which the
     // compiled function's runtime overwrites right after the forward.
     .recompute = Recompute::compute_heavy},
    {.name = "aten.native_batch_norm_backward.default",
     .schema = "native_batch_norm_backward(Tensor grad_out, Tensor input, Tensor? weight, "
               "Tensor? running_mean, Tensor? running_var, Tensor? save_mean, "
               "Tensor? save_invstd, bool train, float eps, bool[3] output_mask) "
               "-> (Tensor, Tensor, Tensor)",
     .meta = batch_norm_backward_meta,
     .kernel = batch_norm_backward_kernel,
     .recompute = Recompute::reduction},
};

}  // namespace

std::span<const OpDef> conv_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation,
                   bool transposed, const IntList& output_padding, int64_t groups) {
  static const ops::OpDef& def = ops::lookup("aten.convolution.default");
  return ops::call1(def, {input, weight, ops::optional_arg(bias), stride, padding, dilation,
                          transposed, output_padding, groups});
}

Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const IntList& stride,
              const IntList& padding, const IntList& dilation, int64_t groups) {
  if (input.dim() == 3)
    return squeeze(conv2d(unsqueeze(input, 0), weight, bias, stride, padding, dilation, groups), 0);
  return convolution(input, weight, bias, stride, padding, dilation, false, {0}, groups);
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, bool training,
                                                     double momentum, double eps) {
  static const ops::OpDef& def = ops::lookup("aten.native_batch_norm.default");
  std::vector<Tensor> r =
      ops::dispatch(def, {input, ops::optional_arg(weight), ops::optional_arg(bias),
                          ops::optional_arg(running_mean), ops::optional_arg(running_var), training,
                          momentum, eps});
  return {r[0], r[1], r[2]};
}

Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum, double eps) {
  static const ops::OpDef& functional =
      ops::lookup("aten._native_batch_norm_legit_functional.default");
  if (training && input.dim() >= 2 && input.numel() / std::max<int64_t>(input.size(1), 1) <= 1)
    throw std::invalid_argument(
        "batch_norm: expected more than 1 value per channel when "
        "training, got input of shape " +
        shape_to_string(input.sizes()));
  if (training && running_mean.defined() != running_var.defined())
    throw std::invalid_argument("batch_norm: give both running_mean and running_var, or neither");
  if (!training || !running_mean.defined())
    return std::get<0>(
        native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps));
  std::vector<Tensor> r =
      ops::dispatch(functional, {input, ops::optional_arg(weight), ops::optional_arg(bias),
                                 running_mean, running_var, training, momentum, eps});
  // The buffer update is not part of the differentiated computation (see the top of the file).
  NoGradGuard no_grad;
  Tensor mean = running_mean, var = running_var;
  copy_(mean, r[3]);
  copy_(var, r[4]);
  return r[0];
}

}  // namespace aotgrad
