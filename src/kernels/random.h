// Philox kernels shared by the eager random rows and their functional (seed, offset) forms, so
// that both make the same bits from the same (seed, block offset).
#pragma once

#include <cstdint>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// A b8 tensor of `sizes`: element k is kept when Philox word k (block offset + k / 4, word
// k % 4) is below keep_prob * 2^32. Consumes dropout_blocks(numel) blocks.
Tensor dropout_mask(const IntList& sizes, double keep_prob, uint64_t seed, uint64_t block_offset);
// How many Philox blocks a dropout mask of `numel` elements consumes (one word per element).
int64_t dropout_blocks(int64_t numel);

}  // namespace aotgrad::kernels
