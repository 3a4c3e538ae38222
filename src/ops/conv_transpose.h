// The transposed branch of the convolution rows (ops/conv.cpp): aten.convolution and
// aten.convolution_backward with transposed = true, 1-D ([N, C, L]) and 2-D ([N, C, H, W]).
// conv.cpp's meta / kernel functions call these when the row's `transposed` argument is set;
// the argument order is the rows' (input, weight, bias, stride, padding, dilation, transposed,
// output_padding, groups), and for the backward row (grad_output, input, weight, bias_sizes,
// stride, ..., groups, output_mask).
#pragma once

#include <vector>

#include "ops/op.h"

namespace aotgrad::ops {

std::vector<TensorMeta> transposed_convolution_meta(const OpArgs& a);
std::vector<Tensor> transposed_convolution_kernel(const OpArgs& a);
std::vector<TensorMeta> transposed_convolution_backward_meta(const OpArgs& a);
std::vector<Tensor> transposed_convolution_backward_kernel(const OpArgs& a);

}  // namespace aotgrad::ops
