// What a value costs to keep and a node costs to recompute, from static shapes only.
#pragma once

#include <cstddef>
#include <string>

#include "graph/graph.h"

namespace aotgrad::partition {

// Bytes a tensor with this metadata occupies: numel x itemsize (a view counts its own elements,
// as PyTorch's partitioner counts them). An expanded view can count more bytes than exist (f32
// [2^31, 2^31] viewing one element: 2^64): such a count saturates at SIZE_MAX, and every sum of
// bytes in the partitioner saturates too (saturating_add), so no total wraps to a small number
// ("0 B saved").
size_t value_bytes(const ops::TensorMeta& m);

// "1024 B", or "more than 18446744073709551614 B (saturated)" for a saturated count.
std::string bytes_to_string(size_t bytes);

// Estimated floating-point operations to run `n` once, used as the recompute cost the memory
// budget's knapsack weighs against bytes: 2mnk for mm, 2bmnk for bmm, 2mnk + mn for addmm,
// 2 x output numel x (weight numel / output channels) for convolution; the
// output numel for pointwise ops and factories; the input numel for reductions; 0 for views.
// Another compute-heavy op gets 2 x output numel x the largest trailing input dimension (the
// contraction length of a matmul-like op), and never less than its output numel.
double estimate_flops(const graph::Graph& g, const graph::Node& n);

// Estimated time to run `n` once, in seconds on a core that does 50 GFLOP/s and moves 10 GB/s
// (rough single-core figures; only ratios matter): the larger of its FLOPs and the bytes it
// reads and writes. A recomputed pointwise op or reduction costs its memory traffic, which a FLOP
// count misses by ~50x (recomputing a matmul's LayerNorm input costs more than its FLOPs say).
// Views cost nothing.
double estimate_seconds(const graph::Graph& g, const graph::Node& n);

}  // namespace aotgrad::partition
