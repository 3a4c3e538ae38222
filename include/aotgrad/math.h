// Math and normalization functions: clamp, abs, sign, max/min along a dim, argmax, var/std,
// logsumexp, cumsum (ops/math.cpp); layer norm and dropout (ops/normalization.cpp).
//
// Each dispatches one op-table row, so it runs eagerly with autograd or is recorded when traced.
// Semantics follow ATen: negative dims wrap, an absent dim list (std::nullopt) or an empty one
// means every dim, keepdim keeps reduced dims as size 1.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "aotgrad/tensor.h"

namespace aotgrad {

// ---- pointwise (ops/math.cpp) ----
// min(max(a, min), max); at least one bound must be given. Integral tensors with floating bounds
// give the default float, as torch.clamp.
Tensor clamp(const Tensor& a, const std::optional<Scalar>& min,
             const std::optional<Scalar>& max = std::nullopt);
Tensor abs(const Tensor& a);
Tensor sign(const Tensor& a);

// ---- reductions and scans (ops/math.cpp) ----
// {values, indices}: the largest / smallest element along `dim` and its (first) position.
std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim = false);
// Position of the (first) largest element along `dim`, or in the flattened tensor.
Tensor argmax(const Tensor& a, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// Variance / standard deviation with `correction` (1: Bessel's, the default; 0: biased).
Tensor var(const Tensor& a, const std::optional<IntList>& dims = std::nullopt,
           const Scalar& correction = 1, bool keepdim = false);
Tensor std(const Tensor& a, const std::optional<IntList>& dims = std::nullopt,
           const Scalar& correction = 1, bool keepdim = false);
Tensor logsumexp(const Tensor& a, const IntList& dims, bool keepdim = false);
// Running sum along `dim`; integral and bool inputs sum as i64 unless `dtype` says otherwise.
Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype = std::nullopt);

// ---- normalization (ops/normalization.cpp) ----
// {out, mean, rstd} of aten.native_layer_norm: normalizes over the trailing dims named by
// `normalized_shape`; mean and rstd keep those dims as size 1.
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input,
                                                     const IntList& normalized_shape,
                                                     const Tensor& weight, const Tensor& bias,
                                                     double eps);
Tensor layer_norm(const Tensor& input, const IntList& normalized_shape,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(),
                  double eps = 1e-5);
// {out, mask} of aten.native_dropout: in training (train absent or true) zeroes each element
// with probability p, drawing from default_generator() (seed it with manual_seed()), and scales
// the kept ones by 1 / (1 - p); otherwise returns a copy and an all-true mask.
std::tuple<Tensor, Tensor> native_dropout(const Tensor& input, double p,
                                          std::optional<bool> train = std::nullopt);
// torch.nn.functional.dropout: `input` itself when !train or p == 0.
Tensor dropout(const Tensor& input, double p = 0.5, bool train = true);

}  // namespace aotgrad
