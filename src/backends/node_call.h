// One graph node called through its op-table kernel, the way every backend runs a node it does
// not compile itself (the interpreter runs all of them this way; cpp its extern calls).
//
// Needs: a node of a verified graph whose only in-place ops write graph inputs. Guarantees:
// make_node_call prepares the argument vector once (constants filled in, tensor slots recorded;
// None entries of a Tensor?[] stay undefined); run_node_call copies it per call, so any number of
// threads may run one NodeCall at once.
#pragma once

#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::backends {

struct NodeCall {
  const ops::OpDef* op = nullptr;
  ops::OpArgs args;  // constants filled in; each call copies it and fills the tensor slots
  std::vector<std::pair<size_t, uint32_t>> tensor_slots;         // (arg index, value)
  std::vector<std::tuple<size_t, size_t, uint32_t>> list_slots;  // (arg, element, value)
  std::vector<uint32_t> outputs;
  int written_arg = -1;  // in-place op into a graph input: bump its version counter
};

// `backend` names the caller in the error for a node that writes a value that is not an input.
NodeCall make_node_call(const graph::Graph& g, const graph::Node& n, std::string_view backend);

// Puts the values in `slots` (indexed by value id) into `args`, a copy of c.args, where c's
// tensor and list slots say.
void fill_args(const NodeCall& c, const std::vector<Tensor>& slots, ops::OpArgs& args);

// Runs `c` on the values in `slots` (indexed by value id) and stores its outputs there.
void run_node_call(const NodeCall& c, std::vector<Tensor>& slots);

}  // namespace aotgrad::backends
