// Kernels of the neural-network family: softmax / log_softmax and their backward, nll_loss,
// mse_loss. Inputs may have any strides (a gradient arriving from sum's VJP is expanded, stride
// 0); results are contiguous. Arguments are validated by the op layer's meta functions.
#pragma once

#include <utility>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// ATen's reduction codes (at::Reduction).
enum Reduction : int64_t { kReductionNone = 0, kReductionMean = 1, kReductionSum = 2 };

// Softmax (log = false) or log-softmax along the wrapped `dim`, max-subtracted for stability.
// Computes in float for f32/f16/bf16 and double for f64; the result has `out_dtype`.
Tensor softmax(const Tensor& a, int64_t dim, bool log, DType out_dtype);
// Gradient of softmax from its output: out * (g - sum(g * out)); of log_softmax:
// g - exp(out) * sum(g). Sums along `dim`; the result has `out_dtype`.
Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim, bool log,
                        DType out_dtype);

// Negative log-likelihood over self [N, C] (or [C] with a 0-dim target); target is i64,
// weight [C] or undefined. Returns {output, total_weight}. Throws std::out_of_range naming the
// offending target value when one is outside [0, C) and not ignore_index.
std::pair<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                           const Tensor& weight, int64_t reduction,
                                           int64_t ignore_index);
// d(loss)/d(self): zero except -weight[t] * grad (scaled by 1 / total_weight under mean).
Tensor nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const Tensor& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight);

// (a - b)^2 over the broadcast shape, reduced; a and b are converted to `dtype` (floating).
Tensor mse_loss(const Tensor& a, const Tensor& b, int64_t reduction, DType dtype);
// 2 * (a - b) * grad, divided by the element count under mean; broadcast shape, `dtype`.
Tensor mse_loss_backward(const Tensor& grad, const Tensor& a, const Tensor& b, int64_t reduction,
                         DType dtype);

}  // namespace aotgrad::kernels
