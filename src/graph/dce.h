// Dead-code elimination.
#pragma once

#include "graph/graph.h"

namespace aotgrad::graph {

// Removes the nodes none of whose results reach a graph output.
// Needs: nodes in a valid execution order (verify_graph holds).
// Guarantees: node order of the survivors unchanged; nodes of `effectful` ops and in-place ops
// (op->is_inplace()) are kept even when unused, together with everything they read; inputs,
// outputs and value names untouched; survivors' results renumbered (Graph::replace_nodes).
// Results of removed nodes stay in g.values(), unreferenced; their `producer` field is stale
// (the Graph has no "dead value" state), so walk nodes, not values.
void eliminate_dead_code(Graph& g);

}  // namespace aotgrad::graph
