#include "backends/liveness.h"

namespace aotgrad::backends {

Liveness compute_liveness(const graph::Graph& g, const std::vector<StepValues>& steps) {
  Liveness l;
  l.last_use.assign(g.values().size(), Liveness::kUnused);
  l.free_after.resize(steps.size());
  for (size_t i = 0; i < steps.size(); ++i)
    for (uint32_t v : steps[i].reads) l.last_use[v] = static_cast<int64_t>(i);
  for (graph::ValueId v : g.outputs()) l.last_use[v.index] = Liveness::kOutput;
  for (graph::ValueId v : g.inputs())
    if (l.last_use[v.index] == Liveness::kUnused) l.free_at_start.push_back(v.index);
  for (size_t i = 0; i < steps.size(); ++i)
    for (uint32_t v : steps[i].writes) {
      int64_t last = l.last_use[v];
      if (last == Liveness::kOutput) continue;
      // Written but never read: dead as soon as its step has run.
      l.free_after[last == Liveness::kUnused ? i : static_cast<size_t>(last)].push_back(v);
    }
  return l;
}

std::vector<uint32_t> node_reads(const graph::Node& n) {
  std::vector<uint32_t> reads;
  for (const graph::NodeArg& a : n.args)
    for (graph::ValueId v : graph::arg_values(a)) reads.push_back(v.index);
  return reads;
}

}  // namespace aotgrad::backends
