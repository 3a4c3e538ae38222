#include "partition/exact_oracle.h"

#include <algorithm>
#include <functional>
#include <limits>

#include "partition/cost_model.h"

namespace aotgrad::testing {

bool backward_can_run(const graph::Graph& joint, const partition::JointAnalysis& a,
                      const std::vector<bool>& banned, const std::vector<bool>& saved_value) {
  std::vector<bool> have = saved_value;
  for (graph::ValueId v : a.primals) have[v.index] = true;
  for (graph::ValueId v : a.tangents) have[v.index] = true;
  for (size_t i = 0; i < joint.nodes().size(); ++i) {
    if (!a.relevant[i]) continue;
    const graph::Node& n = joint.nodes()[i];
    bool ready = true;
    for (const graph::NodeArg& arg : n.args)
      for (graph::ValueId v : graph::arg_values(arg)) ready = ready && have[v.index];
    if (a.tangent_dependent[i] && !ready) return false;
    bool runs_in_backward = a.tangent_dependent[i] || !banned[i];
    if (ready && runs_in_backward)
      for (graph::ValueId v : n.outputs) have[v.index] = true;
  }
  for (graph::ValueId g : a.grads)
    if (!have[g.index]) return false;
  return true;
}

OracleResult exact_min_saved_bytes(const graph::Graph& joint, const partition::JointAnalysis& a,
                                   const std::vector<bool>& banned) {
  // Candidates: every value the forward could compute and hand over (tangent-independent, not a
  // primal: primals are free), largest first so that the bound prunes early.
  std::vector<graph::ValueId> cands;
  for (size_t i = 0; i < joint.nodes().size(); ++i)
    if (a.relevant[i] && !a.tangent_dependent[i])
      for (graph::ValueId v : joint.nodes()[i].outputs) cands.push_back(v);
  std::vector<size_t> bytes(joint.values().size(), 0);
  for (graph::ValueId v : cands) bytes[v.index] = partition::value_bytes(joint.value(v).meta);
  std::stable_sort(cands.begin(), cands.end(), [&](graph::ValueId x, graph::ValueId y) {
    return bytes[x.index] > bytes[y.index];
  });

  OracleResult best;
  best.bytes = std::numeric_limits<size_t>::max();
  best.candidates = cands.size();
  std::vector<bool> saved(joint.values().size(), false);
  // Bound: stop when this branch cannot beat the best, or cannot work even if every remaining
  // candidate were saved.
  auto feasible_with_rest = [&](size_t k) {
    std::vector<bool> all = saved;
    for (size_t j = k; j < cands.size(); ++j) all[cands[j].index] = true;
    return backward_can_run(joint, a, banned, all);
  };
  std::function<void(size_t, size_t)> visit = [&](size_t k, size_t total) {
    if (total >= best.bytes) return;
    if (k == cands.size()) {
      ++best.leaves;
      if (backward_can_run(joint, a, banned, saved)) {
        best.bytes = total;
        best.saved.clear();
        for (graph::ValueId v : cands)
          if (saved[v.index]) best.saved.push_back(v);
      }
      return;
    }
    if (!feasible_with_rest(k)) return;
    graph::ValueId v = cands[k];
    saved[v.index] = true;
    visit(k + 1, total + bytes[v.index]);
    saved[v.index] = false;
    visit(k + 1, total);
  };
  visit(0, 0);
  std::sort(best.saved.begin(), best.saved.end());
  return best;
}

}  // namespace aotgrad::testing
