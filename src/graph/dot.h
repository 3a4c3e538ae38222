// Graphviz rendering of a graph (`aotgrad show --dot`): one digraph per graph, inputs and outputs
// as ellipses labelled with their descriptors, each node a box with its op and result types, an
// edge per tensor use. For looking at graphs, not for reading back (the text format is that).
#pragma once

#include <string>

#include "graph/graph.h"

namespace aotgrad::graph {

// `g` as a `digraph` in the DOT language; every label is escaped, so any value name is safe.
// `id` names the digraph (several may share one file).
std::string print_dot(const Graph& g, const std::string& id);

}  // namespace aotgrad::graph
