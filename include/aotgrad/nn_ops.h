// The functional ops LibTorch programs call beyond the core families (issue 17): leaky_relu;
// the binary-cross-entropy, smooth-L1, Huber and L1 losses; transposed convolution; channel-wise
// dropout; norm, all / any and argmin. Semantics, defaults and error cases follow PyTorch 1.13
// (torch.nn.functional). Each function dispatches one op-table row (or a fixed composition of
// rows: l1_loss, feature_dropout, unbatched inputs), so it runs eagerly with autograd or is
// recorded when traced. The backward ops of leaky_relu and the losses, and norm's gradient, are
// themselves differentiable. `reduction` is "mean", "sum" or "none".
// Thread-safety: every function may be called from several threads.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "aotgrad/tensor.h"

namespace aotgrad {

// ---- activations (ops/nn_extra.cpp) ----
// x > 0 ? x : negative_slope * x; floating self. The gradient at x == 0 is negative_slope, as
// PyTorch's.
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
// In place; returns self. Refused on a leaf that requires grad; its gradient (computed from the
// result, as PyTorch's) is refused for a negative slope.
Tensor& leaky_relu_(Tensor& self, const Scalar& negative_slope = 0.01);

// ---- losses (ops/nn_extra.cpp) ----
// -weight * (target * log(self) + (1 - target) * log(1 - self)), each log clamped at -100;
// self holds probabilities in [0, 1] (checked), target has self's shape, weight (optional)
// broadcasts to it and gets no gradient.
Tensor binary_cross_entropy(const Tensor& self, const Tensor& target,
                            const Tensor& weight = Tensor(), const std::string& reduction = "mean");
// binary_cross_entropy(sigmoid(self), target) computed stably from logits; pos_weight
// (optional, broadcast against the classes) weighs the positive term.
Tensor binary_cross_entropy_with_logits(const Tensor& self, const Tensor& target,
                                        const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(),
                                        const std::string& reduction = "mean");
// 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta (d = self - target, broadcast); beta >= 0.
Tensor smooth_l1_loss(const Tensor& self, const Tensor& target,
                      const std::string& reduction = "mean", double beta = 1.0);
// 0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta); delta > 0.
Tensor huber_loss(const Tensor& self, const Tensor& target, const std::string& reduction = "mean",
                  double delta = 1.0);
// |self - target| (composite: sub, abs, mean / sum, as PyTorch 1.13 records it).
Tensor l1_loss(const Tensor& self, const Tensor& target, const std::string& reduction = "mean");

// ---- transposed convolution (ops/conv_transpose.cpp) ----
// torch.nn.functional.conv_transpose1d / 2d: input [N, C, L] / [N, C, H, W] (or unbatched
// [C, L] / [C, H, W]), weight [C, out_channels / groups, k...], bias [out_channels] or
// undefined. Output length (in - 1) stride - 2 padding + dilation (k - 1) + output_padding + 1;
// output_padding must be smaller than the stride. One aten.convolution node (transposed = true).
Tensor conv_transpose1d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const IntList& stride = {1}, const IntList& padding = {0},
                        const IntList& output_padding = {0}, int64_t groups = 1,
                        const IntList& dilation = {1});
Tensor conv_transpose2d(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
                        const IntList& stride = {1}, const IntList& padding = {0},
                        const IntList& output_padding = {0}, int64_t groups = 1,
                        const IntList& dilation = {1});

// ---- channel-wise dropout (ops/nn_extra.cpp) ----
// torch.feature_dropout: in training, zeroes whole channels (every element of input[n, c]) with
// probability p and scales the kept ones by 1 / (1 - p); `input` itself when !train or p == 0.
// input [N, C, ...] (at least 2 dims). The mask is drawn through rand (default_generator(); seed
// it with manual_seed()), so it traces into a philox node: compiled and eager calls draw the same
// channels, and a partitioner may regenerate the mask in the backward instead of saving it.
Tensor feature_dropout(const Tensor& input, double p, bool train);
// torch.nn.functional.dropout2d: feature_dropout (a 3-D input is [N, C, L], as in PyTorch 1.13).
Tensor dropout2d(const Tensor& input, double p = 0.5, bool train = true);

// ---- reductions (ops/reduce_extra.cpp) ----
// The p-norm over every element (torch.norm(self, p)) or over `dim` (empty: every dim; p absent:
// 2, which is also the Frobenius norm over two dims). p = 0 counts non-zeros, p = +-inf is the
// largest / smallest |x|. Floating self. Its gradient is zero where the norm is zero, and at
// p = +-inf is split evenly among the elements that attain the norm, as PyTorch's.
Tensor norm(const Tensor& self, const Scalar& p = 2);
Tensor norm(const Tensor& self, const std::optional<Scalar>& p, const IntList& dim,
            bool keepdim = false);
// Whether every / some element is non-zero (NaN counts as non-zero), over the whole tensor or
// along `dim`: a b8 tensor, never requiring grad. Empty ranges give true (all) / false (any).
Tensor all(const Tensor& self);
Tensor all(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& self);
Tensor any(const Tensor& self, int64_t dim, bool keepdim = false);
// Position of the (first) smallest element along `dim`, or in the flattened tensor; a NaN wins.
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

}  // namespace aotgrad
