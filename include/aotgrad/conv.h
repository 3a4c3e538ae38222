// Convolution, batch normalisation and pooling: the ops of a ResNet block (ops/conv.cpp,
// ops/pooling.cpp). Each function dispatches one op-table row (or a fixed composition of rows),
// so it runs eagerly with autograd or is recorded when traced. Semantics follow ATen / torch.nn.
// Spatial parameters given as one value apply to both spatial dims, as in torch.nn.functional.
#pragma once

#include <optional>
#include <tuple>

#include "aotgrad/tensor.h"

namespace aotgrad {

// aten.convolution: input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or undefined.
// transposed: input [N, C, L] or [N, C, H, W], weight [C, O / groups, k...] (conv_transpose1d /
// conv_transpose2d in aotgrad/nn_ops.h); output_padding must be smaller than the stride.
Tensor convolution(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation,
                   bool transposed, const IntList& output_padding, int64_t groups);
// torch.nn.functional.conv2d: also takes an unbatched [C, H, W] input.
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              const IntList& stride = {1}, const IntList& padding = {0},
              const IntList& dilation = {1}, int64_t groups = 1);

// aten.native_batch_norm: {output, save_mean, save_invstd}. Input [N, C, ...]; weight, bias,
// running_mean, running_var [C] or undefined. As in ATen, training with running statistics
// updates them in place; prefer batch_norm(), which also does so inside compiled functions.
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const Tensor& weight,
                                                     const Tensor& bias, const Tensor& running_mean,
                                                     const Tensor& running_var, bool training,
                                                     double momentum, double eps);
// torch.nn.functional.batch_norm. Training normalises with the batch statistics and, when
// running_mean / running_var are given, updates them in place: running = (1 - momentum) *
// running + momentum * batch statistic (the unbiased variance for running_var). Eval normalises
// with the running statistics (which must then be given).
Tensor batch_norm(const Tensor& input, const Tensor& weight, const Tensor& bias,
                  const Tensor& running_mean, const Tensor& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5);

// aten.max_pool2d_with_indices over [N, C, H, W] or [C, H, W]: {values, indices}; an index is
// the flat position h * W + w of the maximum in its input plane. Empty stride = kernel_size.
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const IntList& kernel_size,
                                                   const IntList& stride = {},
                                                   const IntList& padding = {0},
                                                   const IntList& dilation = {1},
                                                   bool ceil_mode = false);
Tensor max_pool2d(const Tensor& input, const IntList& kernel_size, const IntList& stride = {},
                  const IntList& padding = {0}, const IntList& dilation = {1},
                  bool ceil_mode = false);
// aten.avg_pool2d over [N, C, H, W] or [C, H, W], as torch.nn.functional.avg_pool2d: an empty
// stride means the kernel size; count_include_pad divides by the window including its padding;
// divisor_override, when given, divides every window by it.
Tensor avg_pool2d(const Tensor& input, const IntList& kernel_size, const IntList& stride = {},
                  const IntList& padding = {0}, bool ceil_mode = false,
                  bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
// aten._adaptive_avg_pool2d over [N, C, H, W] or [C, H, W] to output_size [oH, oW] (one value:
// square). Window i along a dim of size H spans [floor(i * H / oH), ceil((i + 1) * H / oH)).
Tensor adaptive_avg_pool2d(const Tensor& input, const IntList& output_size);

// aten.upsample_bilinear2d over [N, C, H, W] to output_size [oH, oW], as F.interpolate(...,
// mode="bilinear"): align_corners maps the corner pixels onto each other; otherwise pixel centres
// are mapped with the scale factor given (scales_h / scales_w, output over input) or oH / H.
Tensor upsample_bilinear2d(const Tensor& input, const IntList& output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt,
                           std::optional<double> scales_w = std::nullopt);
// Its gradient for an input of input_size from grad_output [N, C, oH, oW].
Tensor upsample_bilinear2d_backward(const Tensor& grad_output, const IntList& output_size,
                                    const IntList& input_size, bool align_corners,
                                    std::optional<double> scales_h = std::nullopt,
                                    std::optional<double> scales_w = std::nullopt);

}  // namespace aotgrad
