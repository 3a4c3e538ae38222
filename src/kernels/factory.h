// Kernels that create values from nothing: fills, ranges and Philox random numbers.
#pragma once

#include <cstdint>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// Sets every element of `dst` (any strides) to `value` converted to dst's dtype. A contiguous
// dst takes a parallel straight-line path; copy.h's fill() is the generic strided walk.
void fill_value(const Tensor& dst, const Scalar& value);

// A fresh contiguous tensor of `sizes` and `dtype` with every element `value`.
Tensor full(const IntList& sizes, const Scalar& value, DType dtype);

// n elements start, start + step, ... as a fresh 1-D tensor. i64 results are computed exactly in
// int64; everything else in double and then rounded, as ATen's CPU kernel does.
Tensor arange(const Scalar& start, const Scalar& step, int64_t n, DType dtype);

// ---- random numbers from the counter-based Philox stream (random.h) ----
// Element k of a fill is a pure function of (seed, block_offset, k), so fills parallelise and
// replay exactly. f32, f16 and bf16 draw 4 values per Philox block, f64 2 values per block.

// How many Philox blocks (4 32-bit words each) a fill of `numel` elements of `dtype` consumes:
// reserve 4 * random_blocks(...) words from the Generator and pass the offset it returns.
int64_t random_blocks(DType dtype, int64_t numel);
// Uniform on [0, 1) into a fresh contiguous floating tensor.
void uniform(const Tensor& dst, uint64_t seed, uint64_t block_offset);
// Standard normal (Box-Muller) into a fresh contiguous floating tensor.
void normal(const Tensor& dst, uint64_t seed, uint64_t block_offset);

}  // namespace aotgrad::kernels
