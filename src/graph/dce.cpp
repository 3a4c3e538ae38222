#include "graph/dce.h"

namespace aotgrad::graph {

void eliminate_dead_code(Graph& g) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<bool> live_value(g.values().size(), false);
  for (ValueId v : g.outputs())
    if (v.index < live_value.size()) live_value[v.index] = true;

  // One backward sweep suffices: nodes are in execution order, so every reader of a value comes
  // after its producer and has been decided before the producer is reached.
  std::vector<bool> keep(nodes.size(), false);
  for (size_t k = nodes.size(); k-- > 0;) {
    const Node& n = nodes[k];
    // Mutations and effects are observable without a graph output reading them.
    bool live = n.op->recompute == ops::Recompute::effectful || n.op->is_inplace();
    for (ValueId v : n.outputs) live = live || (v.index < live_value.size() && live_value[v.index]);
    if (!live) continue;
    keep[k] = true;
    for (const NodeArg& a : n.args)
      for (ValueId v : arg_values(a))
        if (v.index < live_value.size()) live_value[v.index] = true;
  }

  std::vector<Node> kept;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (keep[k]) kept.push_back(nodes[k]);
  if (kept.size() != nodes.size()) g.replace_nodes(std::move(kept));
}

}  // namespace aotgrad::graph
