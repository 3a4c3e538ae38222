// The graph text format, reading side (the format is specified in docs/ir.md).
#pragma once

#include <string_view>

#include "graph/graph.h"

namespace aotgrad::graph {

// Reads one graph written in the text format (what print_graph prints, plus free whitespace and
// '#' comments; arguments may be positional or named; omitted ones take their schema defaults).
// Needs: every op named in the text registered in the op table (ops::find).
// Guarantees: value names, node order, metadata (from the type annotations; nothing is
// recomputed) and descriptors exactly as written. It checks syntax, names and arity, not shapes:
// run verify_graph for that. Throws std::invalid_argument("line L, column C: <what>") at the first
// error: unknown op, unknown value, redefinition, bad type annotation, arity mismatch, unknown
// keyword argument, an argument of the wrong kind, missing '}'.
Graph parse_graph(std::string_view text);

}  // namespace aotgrad::graph
