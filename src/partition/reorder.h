// Placing recomputed forward nodes in the backward graph (PyTorch's
// reordering_to_mimic_autograd_engine).
//
// Needs: a backward graph whose first `num_saved` inputs are saved values and the rest tangents,
// nodes in a valid execution order.
// Guarantees: the same nodes in a valid order in which every node that does not depend on a
// tangent (a forward node recomputed from saved values) comes just before its first user that
// does, so a recomputed value lives only as long as the backward step that needs it, as in eager
// autograd; nodes that depend on a tangent keep their relative order.
#pragma once

#include <cstddef>

#include "graph/graph.h"

namespace aotgrad::partition {

void place_recomputation_before_use(graph::Graph& backward, size_t num_saved);

}  // namespace aotgrad::partition
