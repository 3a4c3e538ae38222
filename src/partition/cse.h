// Common-subexpression elimination on the joint graph, before partitioning (PyTorch's
// fx_graph_cse, which min_cut_rematerialization_partition runs first).
//
// Needs: nodes in a valid execution order (verify_graph holds).
// Guarantees: a node whose op and arguments (after earlier merges) equal an earlier node's is
// removed and its users read the earlier node's results. Never merged: random ops (two draws are
// two different tensors), effectful and in-place ops, and nodes whose results are graph outputs
// or values a graph output is a view of (two outputs must stay two tensors with two storages:
// the caller may mutate one). Inputs, outputs, value names and
// the relative order of the survivors are unchanged; results of removed nodes stay in g.values(),
// unreferenced (as after eliminate_dead_code).
//
// It runs on the joint graph before the cut is chosen, never afterwards, so it cannot merge a
// forward node recomputed in the backward back into its forward original and undo the choice to
// recompute it.
#pragma once

#include <cstddef>

#include "graph/graph.h"

namespace aotgrad::partition {

// Returns the number of nodes removed.
size_t eliminate_common_subexpressions(graph::Graph& g);

}  // namespace aotgrad::partition
