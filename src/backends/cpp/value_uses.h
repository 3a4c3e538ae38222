// Who reads each value of a graph, and which values are its outputs: what the cpp scheduling
// passes (GEMM epilogues, folded expands, kernel outputs, cat fusion) decide fusion by. Computed
// once per schedule_graph and handed to each pass.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::backends::cpp {

struct ValueUses {
  std::vector<std::vector<uint32_t>> users;  // per value: the reading nodes, once per argument
  std::vector<bool> is_output;               // per value: a graph output
};

inline ValueUses value_uses(const graph::Graph& g) {
  ValueUses u;
  u.users.resize(g.values().size());
  u.is_output.assign(g.values().size(), false);
  const auto& nodes = g.nodes();
  for (uint32_t i = 0; i < nodes.size(); ++i)
    for (const graph::NodeArg& a : nodes[i].args)
      for (graph::ValueId v : graph::arg_values(a)) u.users[v.index].push_back(i);
  for (graph::ValueId v : g.outputs()) u.is_output[v.index] = true;
  return u;
}

}  // namespace aotgrad::backends::cpp
