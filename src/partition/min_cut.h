// The min-cut rematerialization partitioner (after PyTorch's min_cut_rematerialization_partition).
//
// Needs: a joint graph with inputs (primals..., tangents...) and outputs (forward outputs...,
// gradients...), as aot::build_joint makes it.
// Guarantees: the forward graph computes the forward outputs and the saved values; the backward
// graph computes the gradients from the saved values and the tangents, recomputing every other
// forward value it needs just before its first use; the saved activation bytes are the minimum
// any partition obeying the recompute rules (below) can save, or, under a memory budget < 1, at
// most min + budget x (max - min), where max is that minimum and min is what is left when every
// recomputable node is recomputed; they never grow as the budget shrinks.
//
// Recompute rules (from each op's Recompute class in the op table):
//   - pointwise, view, reduction and factory results may be recomputed;
//   - compute_heavy results (mm, bmm, addmm, convolution) of the forward are not, unless the
//     memory budget lets the knapsack give them up (budget 0: all of them);
//   - random and effectful results never are (a recomputed draw would differ: RNG state is not
//     functionalized), so at budget 0 they are what is saved besides graph inputs;
//   - graph inputs (primals) are free to save: they are alive anyway.
//
// Reading guide: min_cut_partition() is the pipeline, top to bottom. analyze_joint() classifies
// the nodes; solve_min_cut() builds the flow graph and returns the cut for one set of bans;
// choose_saved_values() (choose_saved.h) picks the bans for the memory budget; build_partition()
// extracts the two graphs for a chosen set of saved values.
#pragma once

#include <string>
#include <vector>

#include "partition/partition.h"
#include "partition/registry.h"

namespace aotgrad::partition {

// Why a node may not be recomputed in the backward.
enum class Ban : uint8_t {
  none,
  compute_heavy,  // a forward mm/bmm/addmm/convolution (lifted by the memory budget)
  random,         // draws from a generator
  effectful,      // mutates state
};

// What the partitioner knows about each node of a joint graph (vectors indexed by node).
struct JointAnalysis {
  std::vector<graph::ValueId> primals, tangents, fw_outputs, grads;
  // Reads a tangent, directly or through other nodes: backward work, never saved or recomputed.
  std::vector<bool> tangent_dependent;
  // Needed by a forward output: runs in the forward graph in any case.
  std::vector<bool> forward_required;
  // Needed by a forward output or a gradient (the rest is dead and dropped).
  std::vector<bool> relevant;
  // The ban at budget 1. compute_heavy only for forward-required nodes: a heavy node only the
  // backward needs runs once wherever it lands.
  std::vector<Ban> ban;
  // The memory budget that governs the node (its region's, else the configured one).
  std::vector<double> budget;
  // Distance (in nodes) from a tangent-independent node to its nearest backward use; large when
  // the backward never reads it, directly or through recomputation.
  std::vector<int> dist_from_backward;

  bool is_primal(graph::ValueId v) const;
};

// Classifies `joint`'s nodes. `node_budgets` (by node, NaN = none) override `default_budget`;
// every budget is checked to lie in [0, 1] (std::invalid_argument otherwise).
JointAnalysis analyze_joint(const graph::Graph& joint, const JointInfo& info,
                            const std::vector<double>& node_budgets, double default_budget);

struct Cut {
  std::vector<graph::ValueId> saved;  // tangent-independent non-primal values, by value index
  size_t bytes = 0;                   // their total bytes
};

// The cheapest set of values to save so that the backward can compute everything it needs from
// them, the primals and the tangents, recomputing only nodes with banned[node] false. Ties in
// bytes go to values nearer their backward use (less to recompute).
Cut solve_min_cut(const graph::Graph& joint, const JointAnalysis& a,
                  const std::vector<bool>& banned);

// True when the backward can compute every tangent-dependent node and every gradient from
// `saved` (plus primals and tangents) recomputing only unbanned nodes. Used by tests and checks.
bool saved_set_is_valid(const graph::Graph& joint, const JointAnalysis& a,
                        const std::vector<bool>& banned, const std::vector<graph::ValueId>& saved);

// The forward and backward graphs that pass `saved` (activations; the primals the backward reads
// are added) between them, with one SavedValue per saved value; reasons[i] explains saved[i].
Partition build_partition(const graph::Graph& joint, const JointAnalysis& a,
                          const std::vector<graph::ValueId>& saved,
                          const std::vector<std::string>& reasons);

// The "min_cut" partitioner: CSE, shape-only uses dropped, analysis, saved values chosen for the
// memory budget, graphs built, recomputation placed before first use.
Partition min_cut_partition(const graph::Graph& joint, const JointInfo& info,
                            const PartitionOptions& options);

}  // namespace aotgrad::partition
