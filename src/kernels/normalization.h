// Eager CPU kernels of the normalization family: layer norm (forward and backward) and dropout.
//
// Layer norm sees its input as M rows of N = prod(normalized_shape) elements. Results are fresh
// and contiguous; inputs may have any strides. f16/bf16 inputs compute in f32 and store their own
// dtype. Shapes and dtypes are validated by the op rows' meta functions; these kernels trust them.
#pragma once

#include <array>
#include <cstdint>
#include <utility>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

struct LayerNormResult {
  Tensor out;   // input's shape and dtype
  Tensor mean;  // `stat_sizes`, `stat_dtype`
  Tensor rstd;  // 1 / sqrt(biased variance + eps)
};
// `weight` and `bias` may be undefined (no affine transform).
LayerNormResult layer_norm(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias,
                           double eps, const IntList& stat_sizes, DType stat_dtype);

// {grad_input, grad_weight, grad_bias}; an entry whose output_mask is false is an empty [0]
// tensor of its dtype. grad_weight / grad_bias have shape `param_sizes` and dtype `param_dtype`.
std::array<Tensor, 3> layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                          const Tensor& mean, const Tensor& rstd,
                                          const Tensor& weight, int64_t n,
                                          const std::array<bool, 3>& output_mask,
                                          const IntList& param_sizes, DType param_dtype);

// {input * mask * scale, mask (b8)}: element k is kept when the k-th 32-bit word of the Philox
// stream (seed, from block `block_offset`) falls below keep_prob * 2^32. scale is 1 / keep_prob
// (0 when keep_prob is 0). Consumes ceil(numel / 4) Philox blocks.
std::pair<Tensor, Tensor> dropout(const Tensor& input, double keep_prob, uint64_t seed,
                                  uint64_t block_offset);
// grad * mask * scale, in grad's dtype.
Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double scale);

}  // namespace aotgrad::kernels
