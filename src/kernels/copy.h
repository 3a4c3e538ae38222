// Strided copy, fill and accumulate: the kernels every other layer leans on.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// dst[...] = src broadcast to dst's shape, converted to dst's dtype. dst may be any strided view.
void copy_into(const Tensor& dst, const Tensor& src);
// dst[...] += src broadcast to dst's shape (dst's dtype).
void add_into(const Tensor& dst, const Tensor& src);
void fill(const Tensor& dst, const Scalar& value);
// A new contiguous tensor with a's values, converted to `dtype`.
Tensor contiguous_copy(const Tensor& a, DType dtype);

}  // namespace aotgrad::kernels
