#include "backends/cpp/attention_pairs.h"

#include <optional>
#include <string_view>

namespace aotgrad::backends::cpp {
namespace {

constexpr std::string_view kForward = "aotgrad.masked_attention.default";
constexpr std::string_view kBackward = "aotgrad.masked_attention_backward.default";

// The nodes that read node `root`'s outputs, directly or not (root included), by index.
std::vector<bool> dependents(const graph::Graph& g, uint32_t root) {
  const auto& nodes = g.nodes();
  std::vector<bool> dep(nodes.size(), false), value_dep(g.values().size(), false);
  dep[root] = true;
  for (graph::ValueId v : nodes[root].outputs) value_dep[v.index] = true;
  for (size_t i = root + 1; i < nodes.size(); ++i) {
    for (const graph::NodeArg& a : nodes[i].args)
      for (graph::ValueId v : graph::arg_values(a)) dep[i] = dep[i] || value_dep[v.index];
    if (dep[i])
      for (graph::ValueId v : nodes[i].outputs) value_dep[v.index] = true;
  }
  return dep;
}

struct Partner {
  uint32_t forward = 0;
  std::vector<bool> dependents;  // of the forward (dependents())
};

// The forward node a backward node can pair with: a forward row before it, not yet paired, whose
// q, k, v, mask and scale (args 0-4) are the backward's (args 1-5).
std::optional<Partner> partner(const graph::Graph& g, uint32_t b, const std::vector<bool>& paired) {
  const auto& nodes = g.nodes();
  for (uint32_t f = 0; f < b; ++f) {
    if (paired[f] || nodes[f].op->name != kForward || nodes[f].args.size() != 5 ||
        nodes[b].args.size() != 7)
      continue;
    bool same = true;
    for (size_t i = 0; i < 5 && same; ++i) same = nodes[f].args[i] == nodes[b].args[i + 1];
    // An in-place node (it writes a graph input) in between orders reads and writes of that
    // input that the reorder would swap, and may change q, k or v between the two rows.
    for (uint32_t i = f + 1; i < b && same; ++i) same = !nodes[i].op->is_inplace();
    if (!same) continue;
    std::vector<bool> dep = dependents(g, f);
    if (!dep[b]) return Partner{f, std::move(dep)};
  }
  return std::nullopt;
}

}  // namespace

std::vector<AttentionPair> pair_attention(graph::Graph& g) {
  std::vector<AttentionPair> pairs;
  std::vector<bool> paired(g.nodes().size(), false);
  for (uint32_t b = 0; b < g.nodes().size(); ++b) {
    if (g.nodes()[b].op->name != kBackward) continue;
    const std::optional<Partner> f = partner(g, b, paired);
    if (!f) continue;
    // The order: the nodes before the backward that do not depend on the forward, the backward,
    // then the forward and its dependents that stood before the backward, then the rest.
    const std::vector<bool>& dep = f->dependents;
    std::vector<uint32_t> order, moved;
    for (uint32_t i = 0; i < b; ++i) (dep[i] ? moved : order).push_back(i);
    // An earlier pair stays where it is (its forward's readers after its backward).
    bool moves_a_pair = false;
    for (uint32_t i : moved) moves_a_pair = moves_a_pair || paired[i];
    if (moves_a_pair) continue;
    const auto new_b = static_cast<uint32_t>(order.size());
    order.push_back(b);
    order.insert(order.end(), moved.begin(), moved.end());
    for (auto i = static_cast<uint32_t>(b + 1); i < g.nodes().size(); ++i) order.push_back(i);
    // Earlier pairs' indices follow their nodes (none of which moves past another's reader).
    std::vector<graph::Node> nodes;
    std::vector<bool> now_paired;
    nodes.reserve(order.size());
    for (uint32_t i : order) {
      nodes.push_back(g.nodes()[i]);
      now_paired.push_back(paired[i]);
    }
    std::vector<uint32_t> where(order.size());
    for (uint32_t i = 0; i < order.size(); ++i) where[order[i]] = i;
    for (AttentionPair& p : pairs) p = {where[p.forward], where[p.backward]};
    g.replace_nodes(std::move(nodes));
    paired = std::move(now_paired);
    // The loop goes on at b + 1: the node after the backward keeps its index.
    pairs.push_back({new_b + 1, new_b});
    paired[new_b] = paired[new_b + 1] = true;
  }
  return pairs;
}

}  // namespace aotgrad::backends::cpp
