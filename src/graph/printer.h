// The graph text format, printing side (the format is specified in docs/ir.md).
#pragma once

#include <string>

#include "graph/graph.h"

namespace aotgrad::graph {

// Prints `g` in the text format parse_graph reads back: print_graph(parse_graph(t)) == t for
// every printed t.
// Needs: nothing; a malformed graph still prints (undefined value ids print as a quoted
// "<invalid value N>" name) so that verifier failures can be shown. Throws std::invalid_argument
// only for a node without an op.
// Guarantees: deterministic output; tensor arguments positional, other arguments as name=value in
// schema order and omitted when equal to the schema default; descriptors as trailing comments.
std::string print_graph(const Graph& g);

}  // namespace aotgrad::graph
