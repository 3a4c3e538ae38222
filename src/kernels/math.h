// Eager CPU kernels of the math family: clamp, abs, sign, max/min along a dim, argmax, var/std,
// logsumexp, cumsum.
//
// Inputs may have any strides (views, expanded stride-0 dims, offsets); every result is a fresh
// contiguous tensor of the dtype the op rows' meta functions promise. Dims are already wrapped
// and validated by the op layer, and "no dims given" has already become "every dim". f16 and
// bf16 compute in f32; floating sums (var, logsumexp, cumsum) accumulate in double, as ATen's
// CPU kernels do, so f32 results are exact to rounding.
#pragma once

#include <optional>
#include <utility>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// min(max(a, lo), hi) in `out_dtype`; an absent bound is not applied. NaN stays NaN.
Tensor clamp(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi,
             DType out_dtype);
Tensor abs(const Tensor& a);
// -1, 0 or 1 in a's dtype (bool: itself); NaN gives 0, as ATen's CPU kernel.
Tensor sign(const Tensor& a);

// {values, indices (i64)} of the largest (`is_max`) or smallest element along `dim`; the first
// one wins ties, and a NaN wins over every number. The dim must not be empty.
std::pair<Tensor, Tensor> max_min_dim(const Tensor& a, int64_t dim, bool keepdim, bool is_max);
// Index of the first largest element along `dim`, or of the flattened tensor when dim is absent
// (keepdim then gives a shape of all ones). With !is_max, of the first smallest (argmin).
Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim, bool is_max = true);

// sum((x - mean)^2) / max(0, n - correction) over `dims`, in a's (floating) dtype; the square
// root of it when `take_sqrt`.
Tensor var(const Tensor& a, const IntList& dims, double correction, bool keepdim, bool take_sqrt);
// log(sum(exp(x))) over `dims`, computed around the maximum so large inputs do not overflow.
Tensor logsumexp(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype);
// Running sum along `dim` in `out_dtype`.
Tensor cumsum(const Tensor& a, int64_t dim, DType out_dtype);

}  // namespace aotgrad::kernels
