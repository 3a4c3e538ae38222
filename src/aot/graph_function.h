// A loaded graph as a function: what lets GraphProgram and the CLI accept graphs that mutate
// (PyTorch's make_fx graphs keep relu_, add_, copy_ into buffers, as_strided_, ...). Such a graph
// is run through the same tracer aot_function uses — a parsed graph is just another function to
// trace — so its in-place ops are functionalized there, and the writes into its inputs become
// ViewAndMutationMeta that the runtime applies. One functionalization, not a second one for text.
//
// Needs: a verified graph. Guarantees: the function dispatches every node, in order, through the
// innermost interpreter (eager, or the tracer), exactly as C++ code calling those ops would.
// Thread-safety: the function holds the graph read-only; calls are independent.
#pragma once

#include <memory>
#include <vector>

#include "aotgrad/aot.h"
#include "graph/graph.h"

namespace aotgrad::aot {

// Whether any node of `g` writes in place (into an input, a view of one, or an intermediate).
bool has_mutation(const graph::Graph& g);

// Per graph input: whether an in-place node writes into it, directly or through a chain of views.
std::vector<bool> written_inputs(const graph::Graph& g);

// Runs `g`'s nodes through ops::dispatch on the given inputs and returns its outputs.
FlatFn graph_as_function(std::shared_ptr<const graph::Graph> g);

}  // namespace aotgrad::aot
