// Shapes are static, so a use that reads only a value's metadata needs nothing saved.
//
// Factory ops (Recompute::factory: zeros_like, ones_like, full_like, empty_like) read their
// tensor argument for its sizes, dtype and strides only. Left alone, such a use in the backward
// would make the partitioner keep the argument alive (or recompute it) for nothing.
//
// Needs: nodes in a valid execution order.
// Guarantees: every tensor argument of a factory node that is made by another node (not a graph
// input) and is contiguous gets replaced by a fresh aten.empty of the same sizes and dtype,
// inserted just before that node; the factory's result metadata is unchanged. Non-contiguous
// arguments are left as they are (their strides are part of the factory's result).
#pragma once

#include <cstddef>

#include "graph/graph.h"

namespace aotgrad::partition {

// Returns the number of arguments replaced.
size_t drop_shape_only_uses(graph::Graph& g);

}  // namespace aotgrad::partition
