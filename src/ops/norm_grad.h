// The gradients of a normalization y = (x - mean) * rstd * weight + bias written with
// differentiable Tensor ops, for double backward. The fused backward rows (layer norm, batch
// norm) have no VJP of their own; when the engine records a backward (create_graph, seen as grad
// mode being on inside a VJP, which ordinary backward passes and joint tracing run without),
// their forward rows' VJPs call this instead, as PyTorch's layer norm does with
// infinitely_differentiable_native_layer_norm_backward. Everything it calls has a VJP, so the
// result can be differentiated any number of times.
#pragma once

#include <array>
#include <initializer_list>

#include "aotgrad/tensor.h"

namespace aotgrad::ops {

struct NormStatistics {
  IntList dims;        // the dims mean and variance reduce over
  IntList param_dims;  // the dims the weight and bias gradients reduce over
  double eps = 0;
  // Given (eval-mode batch norm): constants broadcastable to x. Absent: the biased mean and
  // variance of x over `dims`, differentiated with x.
  Tensor mean, var;
};

struct NormGrads {
  Tensor input, weight, bias;
};

// `weight` broadcastable to x, or undefined; the weight and bias gradients have weight_sizes.
// mask: which of input / weight / bias to compute.
NormGrads differentiable_norm_backward(const Tensor& grad, const Tensor& x, const Tensor& weight,
                                       const IntList& weight_sizes, const NormStatistics& stats,
                                       std::array<bool, 3> mask);

// Whether a VJP runs inside a backward that is being recorded and reaches a tensor that
// requires grad: then its result must be differentiable (see the top of this file).
bool recording_backward(std::initializer_list<Tensor> tensors);

}  // namespace aotgrad::ops
