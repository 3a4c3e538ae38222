// Structural and metadata checks of a graph.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>

#include "graph/graph.h"

namespace aotgrad::graph {

// What verify_graph throws: the message, and the index of the offending node when a node is at
// fault (so that a caller holding the text's positions, GraphProgram, can point at its line).
class VerifyError : public std::invalid_argument {
 public:
  VerifyError(const std::string& what, std::optional<size_t> node)
      : std::invalid_argument(what), node_(node) {}
  std::optional<size_t> node() const { return node_; }

 private:
  std::optional<size_t> node_;
};

// Checks that `g` is well formed; throws VerifyError (a std::invalid_argument: one line of at most
// 300 characters, names escaped) naming the offending node (its first result and op, "node %mm =
// aten.mm.default") or graph output.
// Needs: nothing (any Graph, however built). Runs every node's meta function on fake tensors, so
// it costs a meta call per node but never touches data.
// Guarantees, when it returns: every value is defined once before use; every node has one
// argument per schema argument, each of the kind its schema type takes; result counts match the
// schema; graph outputs are defined values; and each result's recorded dtype and sizes are what
// the op's meta function computes from the recorded input metadata.
void verify_graph(const Graph& g);

// Whether every element of a tensor of metadata `m` has a byte offset an int64 holds through its
// own strides (or contiguous ones when `m.strides` is empty), and its element count fits int64 —
// so contiguous_strides(m.sizes), numel and the byte size of its storage are computed without
// overflow. Sizes, strides and offset must be non-negative. (An expanded view may have more
// elements than bytes: f32[2^31, 2^31] with zero strides is addressable.)
bool is_addressable(const ops::TensorMeta& m);

}  // namespace aotgrad::graph
