// The exact oracle for the min-cut partitioner: the fewest saved activation bytes any choice of
// saved values allows, found by enumerating the choices (branch and bound over subsets).
//
// It shares only the node classification (JointAnalysis: which nodes are backward work, which
// are banned from recomputation) with the partitioner; whether a choice works is decided here by
// simulating the backward, not by a flow graph. Exponential: meant for joint graphs with up to
// ~20 forward nodes.
#pragma once

#include <cstddef>
#include <vector>

#include "graph/graph.h"
#include "partition/min_cut.h"

namespace aotgrad::testing {

struct OracleResult {
  size_t bytes = 0;
  std::vector<graph::ValueId> saved;
  size_t candidates = 0;  // values that were enumerated
  size_t leaves = 0;      // choices checked
};

// True when a backward that receives `saved`, the primals and the tangents can compute every
// value it needs, recomputing only nodes with banned[node] false.
bool backward_can_run(const graph::Graph& joint, const partition::JointAnalysis& a,
                      const std::vector<bool>& banned, const std::vector<bool>& saved_value);

OracleResult exact_min_saved_bytes(const graph::Graph& joint, const partition::JointAnalysis& a,
                                   const std::vector<bool>& banned);

}  // namespace aotgrad::testing
