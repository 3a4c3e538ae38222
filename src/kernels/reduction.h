// Reductions (sum, mean, amax) over any set of dims of a strided tensor.
//
// `dims` are already normalized by the op layer: wrapped, distinct, and "no dims given" turned
// into "all dims". Results are contiguous. Floating sums accumulate in double, integral and bool
// sums in int64 (as torch), so f32 results are exact to rounding and f64 is good for gradcheck.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// `sizes` with each dim of `dims` dropped, or set to 1 when keepdim.
IntList reduced_sizes(const IntList& sizes, const IntList& dims, bool keepdim);

// Sum in `out_dtype`: each element is converted to the accumulator type of `out_dtype` first,
// so sum(f32 input, dtype=i64) truncates element-wise exactly like casting then summing.
Tensor sum(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype);
// Sum divided by the reduced element count; `out_dtype` must be floating. Empty range -> NaN.
Tensor mean(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype);
// Largest element (a's dtype); NaN wins, as in torch.amax. The caller rejects empty ranges.
Tensor amax(const Tensor& a, const IntList& dims, bool keepdim);

}  // namespace aotgrad::kernels
