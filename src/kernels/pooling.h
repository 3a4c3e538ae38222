// 2-D pooling over the last two dims of an [N, C, H, W] or [C, H, W] tensor: max pooling with
// indices, average pooling and adaptive average pooling, forward and backward.
//
// Every (n, c) plane is independent: the OpenMP loop runs over planes. Inputs may have any
// strides (copied to a contiguous tensor first); results are contiguous. f16 / bf16 compute in
// f32. Shapes are validated by the op layer's meta functions.
#pragma once

#include <array>
#include <utility>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

struct Pool2dParams {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  bool ceil_mode = false;
};

// ATen's pooling_output_shape: floor (or ceil) of the window count, where with ceil_mode the
// last window must start inside the input or its left padding.
int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil,
                         bool ceil_mode);

// {values, indices}: the maximum of each window (NaN wins, as in ATen) and its flat position
// h * W + w in the input plane (i64).
std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Pool2dParams& p);
// Scatters grad_output into a zero gradient of input's shape at `indices`, adding where windows
// overlap.
Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& input,
                                        const Tensor& indices);

// Averages over the windows [floor(i * H / oH), ceil((i + 1) * H / oH)) along each dim.
Tensor adaptive_avg_pool2d(const Tensor& input, int64_t out_h, int64_t out_w);
// Spreads each grad_output element evenly over its window (grad_output's last two dims give
// the output size).
Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& input);

struct AvgPool2dParams {
  Pool2dParams window;  // dilation stays 1
  bool count_include_pad = true;
  int64_t divisor_override = 0;  // 0: none
};

// ATen's avg_pool2d: each window clipped to the padded input (its size with padding is the
// divisor under count_include_pad), then to the input; a window with no input element gives 0.
Tensor avg_pool2d(const Tensor& input, const AvgPool2dParams& p);
// Spreads each grad_output element over its window, divided as the forward divided.
Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& input,
                           const AvgPool2dParams& p);

}  // namespace aotgrad::kernels
