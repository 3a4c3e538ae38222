#include "partition/cse.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

namespace aotgrad::partition {
namespace {

template <typename T>
void append_bytes(std::string& key, const T& x) {
  char buf[sizeof(T)];
  std::memcpy(buf, &x, sizeof(T));
  key.append(buf, sizeof(T));
}

void append_list(std::string& key, const IntList& l) {
  append_bytes(key, l.size());
  for (int64_t x : l) append_bytes(key, x);
}

// A byte string equal for two nodes exactly when they compute the same thing: the op and every
// argument (values by id, numbers bit for bit, so -0.0 and 0.0 stay apart).
std::string node_key(const graph::Node& n) {
  std::string key;
  append_bytes(key, n.op);
  for (const graph::NodeArg& a : n.args) {
    key.push_back(static_cast<char>(a.index()));
    std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, graph::ValueId>) {
            append_bytes(key, x.index);
          } else if constexpr (std::is_same_v<T, graph::ValueList>) {
            append_bytes(key, x.size());
            for (graph::ValueId v : x) append_bytes(key, v.index);
          } else if constexpr (std::is_same_v<T, Scalar>) {
            key.push_back(static_cast<char>(x.kind()));
            if (x.is_floating())
              append_bytes(key, x.to_double());
            else
              append_bytes(key, x.to_int());
          } else if constexpr (std::is_same_v<T, IntList>) {
            append_list(key, x);
          } else if constexpr (std::is_same_v<T, std::string>) {
            append_bytes(key, x.size());
            key += x;
          } else if constexpr (std::is_same_v<T, std::monostate>) {
          } else {
            append_bytes(key, x);  // int64_t, double, bool, DType
          }
        },
        a);
  }
  return key;
}

bool mergeable(const graph::Node& n, const std::unordered_set<uint32_t>& graph_outputs) {
  ops::Recompute r = n.op->recompute;
  if (r == ops::Recompute::random || r == ops::Recompute::effectful || n.op->is_inplace() ||
      n.outputs.empty())
    return false;
  for (graph::ValueId v : n.outputs)
    if (graph_outputs.count(v.index)) return false;
  return true;
}

}  // namespace

size_t eliminate_common_subexpressions(graph::Graph& g) {
  // Graph outputs, and the values they view: two outputs that are views of two equal values
  // (1-D matmul's squeeze of an mm) must not end up views of one tensor either.
  std::unordered_set<uint32_t> graph_outputs;
  std::vector<graph::ValueId> pending(g.outputs().begin(), g.outputs().end());
  while (!pending.empty()) {
    graph::ValueId v = pending.back();
    pending.pop_back();
    if (!graph_outputs.insert(v.index).second) continue;
    int32_t p = g.value(v).producer;
    if (p < 0) continue;
    const graph::Node& n = g.nodes()[static_cast<size_t>(p)];
    if (!n.op->is_view()) continue;
    if (const auto* base = std::get_if<graph::ValueId>(&n.args[n.op->view_of_arg()]))
      pending.push_back(*base);
  }
  std::unordered_map<uint32_t, graph::ValueId> replaced;  // removed value -> surviving value
  std::unordered_map<std::string, size_t> seen;           // key -> index in `kept`
  std::vector<graph::Node> kept;
  kept.reserve(g.nodes().size());
  for (const graph::Node& original : g.nodes()) {
    graph::Node n = original;
    graph::for_each_value(n.args, [&](graph::ValueId& v) {
      if (auto it = replaced.find(v.index); it != replaced.end()) v = it->second;
    });
    if (mergeable(n, graph_outputs)) {
      auto [it, inserted] = seen.emplace(node_key(n), kept.size());
      if (!inserted) {
        const graph::Node& survivor = kept[it->second];
        for (size_t k = 0; k < n.outputs.size(); ++k)
          replaced[n.outputs[k].index] = survivor.outputs[k];
        continue;
      }
    }
    kept.push_back(std::move(n));
  }
  size_t removed = g.nodes().size() - kept.size();
  if (removed > 0) g.replace_nodes(std::move(kept));
  return removed;
}

}  // namespace aotgrad::partition
