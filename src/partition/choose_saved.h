// Choosing the saved values under the memory budget (PyTorch's choose_saved_values_set).
//
// Needs: a joint graph and its analysis (min_cut.h).
// Guarantees, with max = the activation bytes of the runtime-optimal cut (every compute-heavy
// forward node banned from recomputation) and min = those of the cut where every compute-heavy
// node under a budget < 1 is unbanned (random and effectful ones always stay banned):
//   - every node at budget 1: the runtime-optimal cut;
//   - every node at budget 0: the min cut (full activation checkpointing, matmuls included);
//   - budget b in between: at most min + b x (max - min) activation bytes, chosen by a 0/1
//     knapsack (knapsack.h) that keeps the compute-heavy results whose recomputation would cost
//     the most FLOPs (cost_model.h) per byte the budget allows, then the min cut for those bans;
//   - the saved bytes never grow as the budget shrinks (see choose_saved.cpp for how);
//   - a reason for every saved value.
// Nodes of different MemoryBudgetGuard regions are grouped by budget; each group's knapsack is
// solved in turn (highest budget first) with the other groups' choices fixed. The bound above
// is then per group and best effort.
#pragma once

#include <string>
#include <vector>

#include "partition/min_cut.h"

namespace aotgrad::partition {

struct SavedChoice {
  std::vector<graph::ValueId> saved;  // non-primal values, by value index
  std::vector<std::string> reasons;   // one per saved value
  size_t bytes = 0;                   // activation bytes saved
  size_t max_bytes = 0;               // the runtime-optimal cut's
  size_t min_bytes = 0;               // with every compute-heavy node under a budget < 1
                                      // unbanned (= max_bytes when every budget is 1)
};

SavedChoice choose_saved_values(const graph::Graph& joint, const JointAnalysis& a);

}  // namespace aotgrad::partition
