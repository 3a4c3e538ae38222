// Eager CPU kernels of the ops LibTorch programs use beyond the core nn family (issue 17):
// leaky_relu, the losses binary_cross_entropy (with and without logits), smooth_l1 and huber, the
// norm reduction, and all / any.
//
// Every function returns a fresh contiguous tensor; inputs may have any strides and broadcast
// against each other (the rows' meta functions check shapes and dtypes first). f16 / bf16
// compute in f32 and round once. A loss with reduction mean / sum returns a 0-dim tensor; the
// backward kernels take grad_output of the loss's shape (0-dim unless reduction is none).
// Thread-safety: each call is independent.
#pragma once

#include <optional>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// x > 0 ? x : x * slope, in self's dtype.
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope);
// self > 0 ? grad : grad * slope (at self == 0 the negative slope, as ATen).
Tensor leaky_relu_backward(const Tensor& grad, const Tensor& self, const Scalar& negative_slope);

// -w (t log(x) + (1 - t) log(1 - x)) with each log clamped at -100, as ATen. `dtype` is the
// result's; weight may be undefined.
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target, const Tensor& weight,
                            int64_t reduction, DType dtype);
// grad * w * (x - t) / max(x (1 - x), 1e-12f), divided by numel for mean.
Tensor binary_cross_entropy_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                                     const Tensor& weight, int64_t reduction, DType dtype);
// (1 - t) x + lw * log(1 + exp(-x)) computed stably, lw = 1 + (pos_weight - 1) t, times weight.
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const Tensor& weight, const Tensor& pos_weight,
                                        int64_t reduction, DType dtype);

// Pointwise loss with parameter `param` (beta for smooth_l1, delta for huber).
enum class RobustLoss : uint8_t { smooth_l1, huber };
Tensor robust_loss(RobustLoss kind, const Tensor& self, const Tensor& target, int64_t reduction,
                   double param, DType dtype);
// d loss / d self; d / d target is its negation.
Tensor robust_loss_backward(RobustLoss kind, const Tensor& grad, const Tensor& self,
                            const Tensor& target, int64_t reduction, double param, DType dtype);

// The p-norm of self over `dims` (already wrapped and distinct; empty: every dim): p = 0 counts
// non-zeros, +-inf is the largest / smallest |x|, otherwise (sum |x|^p)^(1/p). self's dtype.
Tensor norm(const Tensor& self, double p, const IntList& dims, bool keepdim);

// Whether every (all) / some (any) element over `dims` (empty: every dim) is non-zero; b8.
Tensor all_any(bool all, const Tensor& self, const IntList& dims, bool keepdim);

}  // namespace aotgrad::kernels
