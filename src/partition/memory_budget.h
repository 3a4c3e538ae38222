// Per-node memory budgets: how the region of a MemoryBudgetGuard (include/aotgrad/memory_budget.h)
// reaches the min-cut partitioner without a per-node attribute in the Graph IR.
//
// The tracer calls note_node_budget() after appending each node; it records the innermost live
// guard's budget in a thread-local side table keyed by (graph, node index). After tracing, the
// pipeline calls take_node_budgets() on the traced forward graph and hands the result to the
// partitioner as JointInfo::node_budgets: build_joint copies forward node i to joint node i, so the
// indices carry over unchanged.
#pragma once

#include <string_view>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::partition {

// Throws std::invalid_argument naming `what`, the value and the valid range unless 0 <= budget
// <= 1.
void check_memory_budget(double budget, std::string_view what);

// Records the current MemoryBudgetGuard's budget for node `node_index` of `g` (nothing when no
// guard is alive on this thread).
void note_node_budget(const graph::Graph& g, size_t node_index);

// The budgets noted for `g`, one per node of `g` (NaN where none was noted), and forgets them.
// Entries that no longer match `g` (a graph destroyed mid-trace whose address was reused) are
// dropped rather than misapplied.
std::vector<double> take_node_budgets(const graph::Graph& g);

}  // namespace aotgrad::partition
