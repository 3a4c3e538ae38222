#include "partition/reorder.h"

namespace aotgrad::partition {

void place_recomputation_before_use(graph::Graph& g, size_t num_saved) {
  const auto& nodes = g.nodes();
  std::vector<bool> from_tangent_value(g.values().size(), false);
  for (size_t i = num_saved; i < g.inputs().size(); ++i)
    from_tangent_value[g.inputs()[i].index] = true;
  std::vector<bool> tangent_dependent(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const graph::NodeArg& a : nodes[i].args)
      for (graph::ValueId v : graph::arg_values(a))
        tangent_dependent[i] = tangent_dependent[i] || from_tangent_value[v.index];
    if (tangent_dependent[i])
      for (graph::ValueId v : nodes[i].outputs) from_tangent_value[v.index] = true;
  }

  std::vector<bool> emitted(nodes.size(), false);
  std::vector<size_t> order;
  order.reserve(nodes.size());
  // Emits node `root` after the not yet emitted nodes it reads (an explicit stack: recomputed
  // chains can be long).
  auto emit = [&](size_t root) {
    std::vector<std::pair<size_t, bool>> stack{{root, false}};
    while (!stack.empty()) {
      auto [i, expanded] = stack.back();
      stack.pop_back();
      if (emitted[i]) continue;
      if (expanded) {
        emitted[i] = true;
        order.push_back(i);
        continue;
      }
      stack.push_back({i, true});
      const auto& args = nodes[i].args;
      for (size_t k = args.size(); k-- > 0;) {
        std::vector<graph::ValueId> vs = graph::arg_values(args[k]);
        for (size_t j = vs.size(); j-- > 0;)
          if (int32_t p = g.value(vs[j]).producer; p >= 0 && !emitted[p])
            stack.push_back({size_t(p), false});
      }
    }
  };
  for (size_t i = 0; i < nodes.size(); ++i)
    if (tangent_dependent[i]) emit(i);
  for (size_t i = 0; i < nodes.size(); ++i) emit(i);  // what only the outputs read

  std::vector<graph::Node> reordered;
  reordered.reserve(nodes.size());
  for (size_t i : order) reordered.push_back(nodes[i]);
  g.replace_nodes(std::move(reordered));
}

}  // namespace aotgrad::partition
