// The result every partitioner returns: a forward and a backward graph and what passes between.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::partition {

struct SavedValue {
  std::string name;      // value name in the joint graph
  std::string producer;  // op that made it, or "input" for a primal
  ops::TensorMeta meta;
  size_t bytes = 0;
  std::string reason;     // why it is kept
  int primal_index = -1;  // >= 0 when the saved value is a forward input
  // >= 0 when the saved value is a view (through view ops only) of that forward input: the
  // transposed weight `linear` saves, say. It aliases the input's memory, so the report counts it
  // with the graph inputs, not as an activation.
  int view_of_primal = -1;
};

struct Partition {
  // forward: (primals...) -> (forward outputs..., saved...)
  graph::Graph forward{"forward"};
  // backward: (saved..., tangents...) -> (gradients...)
  graph::Graph backward{"backward"};
  std::vector<SavedValue> saved;

  size_t saved_bytes() const;
  // One line per saved value and a total, for humans (saved_report).
  std::string report() const;
};

// The saved-value report: one line per value (name, type, bytes, producer, reason) and the
// totals, split into activations and graph inputs (views of graph inputs count as inputs).
std::string saved_report(const std::vector<SavedValue>& saved);
size_t saved_bytes(const std::vector<SavedValue>& saved);
// The bytes of the saved values that are neither graph inputs nor views of them.
size_t saved_activation_bytes(const std::vector<SavedValue>& saved);

struct JointInfo {
  size_t num_primals = 0;
  size_t num_fw_outputs = 0;
  // Memory budget of each joint node's MemoryBudgetGuard region (NaN or absent: none; see
  // partition/memory_budget.h). Read only by the min-cut partitioner.
  std::vector<double> node_budgets;
};

}  // namespace aotgrad::partition
