// The graph text format, reading side (the format is specified in docs/ir.md).
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::graph {

// A place in a graph text: 1-based line and column (columns count bytes).
struct SourceLocation {
  size_t line = 0;
  size_t column = 0;
};

// Reads one graph written in the text format (what print_graph prints, plus free whitespace and
// '#' comments; arguments may be positional or named; omitted ones take their schema defaults).
// Needs: every op named in the text registered in the op table (ops::find).
// Guarantees: value names, node order, metadata (from the type annotations; nothing is
// recomputed) and descriptors exactly as written. It checks syntax, names and arity, not shapes:
// run verify_graph for that. Throws std::invalid_argument("line L, column C: <what>") at the first
// error: unknown op, unknown value, redefinition, bad type annotation, arity mismatch, unknown
// keyword argument, an argument of the wrong kind, missing '}'. The message is one printable line
// of at most ~300 characters (tokens from the text escaped and cut). Any text gives a graph or
// that error, in linear time: list nesting (64 levels), dims (64) and numbers (int64, double) are
// bounded, and a type whose elements cannot all be addressed with int64 byte offsets is refused.
// `node_locations`, when given, receives where each node's statement starts, by node index (what
// GraphProgram points at when verify_graph rejects a node).
Graph parse_graph(std::string_view text, std::vector<SourceLocation>* node_locations = nullptr);

}  // namespace aotgrad::graph
