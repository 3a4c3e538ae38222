// Memory budgets: the range check shared by AotConfig::activation_memory_budget and
// MemoryBudgetGuard (include/aotgrad/memory_budget.h).
//
// A guard's region reaches the min-cut partitioner without a per-node attribute in the Graph IR:
// the tracer records the live guard's budget for each node it appends (Tracer::node_budgets), and
// the pipeline hands them over as JointInfo::node_budgets. build_joint copies forward node i to
// joint node i, so the indices carry over unchanged.
#pragma once

#include <string_view>

namespace aotgrad::partition {

// Throws std::invalid_argument naming `what`, the value and the valid range unless 0 <= budget
// <= 1.
void check_memory_budget(double budget, std::string_view what);

}  // namespace aotgrad::partition
