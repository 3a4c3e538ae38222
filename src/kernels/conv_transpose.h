// 2-D transposed convolution ("deconvolution") and its gradients, expressed through the regular
// convolution kernels (kernels/conv.h): a transposed convolution of x with weight W is the input
// gradient of the regular convolution with W, evaluated at grad_output = x. So
//   forward      = conv2d_backward(grad_output = x, weight = W)'s input gradient,
//   grad_input   = conv2d(grad_output, W),
//   grad_weight  = conv2d_backward(grad_output = x, input = grad_output)'s weight gradient,
//   grad_bias    = grad_output summed over N, H, W.
// Each therefore runs oneDNN's primitives in f32 (backward-data, forward, backward-weights) and
// the loop nests otherwise, with the dtype rules of kernels/conv.h.
//
// Shapes: input [N, C, H, W], weight [C, O / groups, kH, kW], bias [O] or undefined, output
// [N, O, oH, oW] with oH = (H - 1) stride - 2 padding + dilation (kH - 1) + output_padding + 1
// (output_padding < stride, validated by the op layer, which also maps 1-D onto 2-D).
// Thread-safety: each call is independent.
#pragma once

#include <array>

#include "aotgrad/tensor.h"
#include "kernels/conv.h"

namespace aotgrad::kernels {

Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias,
                        const Conv2dParams& p, const IntList& out_sizes);

// {grad_input, grad_weight, grad_bias}; entry i is undefined unless need[i].
std::array<Tensor, 3> conv_transpose2d_backward(const Tensor& grad_output, const Tensor& input,
                                                const Tensor& weight, const Conv2dParams& p,
                                                std::array<bool, 3> need);

}  // namespace aotgrad::kernels
