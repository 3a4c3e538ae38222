// A recomputed attention and its backward as one step (cpp backend). A partition that saves only
// q, k, v (a memory budget below 1) makes the backward graph run aotgrad.masked_attention again
// for its output, then aotgrad.masked_attention_backward, each computing the same [T, S] weights.
// The pair runs as one call (ops::masked_attention_with_backward) that computes them once.
//
// Needs: a verified graph. Guarantees: pair_attention pairs a forward row with a later backward
// row of the same q, k, v and mask values and the same scale whose arguments do not depend on the
// forward's output, with no in-place node between them, and moves the forward and everything that
// depends on it from before the backward to just after it (relative order kept), so that the pair's
// step, at the backward's place, runs before any reader of the forward's output. Every other node
// keeps its place; the graph still computes the same values (nothing but the forward's dependents
// moves, and they move past nodes they do not read). A node is in at most one pair.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::backends::cpp {

struct AttentionPair {
  uint32_t forward = 0, backward = 0;  // node indices, in the reordered graph
};

// Pairs the rows of `g` and reorders its nodes as above; no pair leaves `g` as it was.
std::vector<AttentionPair> pair_attention(graph::Graph& g);

}  // namespace aotgrad::backends::cpp
