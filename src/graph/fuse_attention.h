// Attention fusion: the eager composite of scaled dot-product attention becomes one
// aotgrad.masked_attention node (ops/attention.cpp), as Inductor's attention patterns replace it
// with a fused attention kernel. It runs on a traced forward graph, before the joint graph is
// built (AotConfig::fuse_attention), so the backward comes from the fused row's VJP and the
// partitioner sees what that row saves: the heads and the mask, not the [*, T, S] weights.
//
// The composite it finds, as matmul's decomposition records it (the shape-only steps between
// the ops are any chain of view / _unsafe_view / reshape, a no-op expand and clone):
//
//   s = bmm(Q, K)                  Q [N, T, D], K [N, D, S]
//   s = s * scale | s / scale      optional
//   s = masked_fill(s, mask, -inf) optional; its mask becomes the row's mask
//   p = _softmax(s, -1)
//   o = bmm(p, V)                  V [N, S, Dv]
//
// When Q, K and V are the contiguous clones of strided views of the same batch rank as the
// weights (the heads of a fused qkv projection, [B, H, T, D]), the row reads those views, and
// the clones are gone; otherwise it reads Q, K^T and V themselves.
//
// Needs: a verified graph. Guarantees: every matched composite is replaced by one
// masked_attention node (and at most two view nodes; a view of the last product back to the
// fused result's shape is dropped, its readers read the fused result), computing the same values
// (up to the products' summation order), and its nodes that nothing else reads are removed. A
// composite whose intermediate (the products, the weights, a clone) is read elsewhere or is a graph
// output, whose mask fill is not -inf, whose softmax runs over another dim, or whose dtype is not
// f32 or f64 (the fused rows take no other) is left alone.
// Inputs, outputs and the other nodes' order are unchanged.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::graph {

struct AttentionFusion {
  size_t fused = 0;  // composites replaced
  // For each node of the rewritten graph, the index in the original graph of the node it is or
  // replaces (a fused node: the composite's last product). Empty when nothing was fused.
  std::vector<size_t> origin;
};

AttentionFusion fuse_attention(Graph& g);

}  // namespace aotgrad::graph
