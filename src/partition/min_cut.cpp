// Reading guide: min_cut_partition() at the bottom is the pipeline. The flow graph of
// solve_min_cut() is the heart: every tangent-independent node N becomes a vertex, every value v
// it makes becomes two vertices v_in -> v_out joined by an edge whose capacity is v's bytes
// (saving v = cutting that edge), users hang off v_out with infinite edges, banned nodes hang
// off the source and backward (tangent-dependent) users lead to the sink. A minimum cut is then
// a cheapest set of values that separates everything that cannot be recomputed from everything
// the backward reads. Primals are free and so are left out of the flow graph altogether.
//
// Max flow: our own Dinic (max_flow.h), not Boost.Graph. Measured on the flow graphs of the bench
// models (best of 50 solves, graph construction included, -O2, Boost 1.74, shared 2-core machine):
//   model     vertices  edges   Dinic   boykov_kolmogorov   push_relabel
//   MLP             59     70    7 us               15 us          21 us
//   block          242    275   49 us               74 us         129 us
//   4 blocks       992   1160  154 us              215 us         421 us
// Building Boost's adjacency_list with its reverse-edge map alone costs about what Dinic takes to
// build and solve; Dinic is also ~100 lines and adds no dependency.

#include "partition/min_cut.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "partition/choose_saved.h"
#include "partition/cost_model.h"
#include "partition/cse.h"
#include "partition/extract.h"
#include "partition/max_flow.h"
#include "partition/memory_budget.h"
#include "partition/reorder.h"
#include "partition/shape_only_uses.h"
#include "tensor/checked_math.h"

namespace aotgrad::partition {
namespace {

constexpr int kFar = 1 << 20;  // dist_from_backward of a node the backward never reaches

Ban ban_of(const graph::Node& n, bool forward_required) {
  switch (n.op->recompute) {
    case ops::Recompute::random:
      return Ban::random;
    case ops::Recompute::effectful:
      return Ban::effectful;
    case ops::Recompute::compute_heavy:
      return forward_required ? Ban::compute_heavy : Ban::none;
    default:
      return n.op->is_inplace() ? Ban::effectful : Ban::none;
  }
}

// Why a graph input is saved; the RNG state inputs say what the backward does with them.
std::string input_reason(const graph::Graph& joint, graph::ValueId v) {
  const std::string plain = "graph input: free to save, it is alive anyway";
  for (size_t i = 0; i < joint.inputs().size() && i < joint.input_descs().size(); ++i) {
    if (joint.inputs()[i].index != v.index) continue;
    const Descriptor& d = joint.input_descs()[i];
    if (d.kind == DescriptorKind::fw_rng_seed || d.kind == DescriptorKind::fw_rng_offset)
      return plain + "; " + d.to_string() + ": the backward replays random draws from it";
  }
  return plain;
}

std::vector<bool> or_of(const std::vector<bool>& a, const std::vector<bool>& b) {
  std::vector<bool> r(a.size());
  for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] || b[i];
  return r;
}

}  // namespace

bool JointAnalysis::is_primal(graph::ValueId v) const {
  return std::find(primals.begin(), primals.end(), v) != primals.end();
}

JointAnalysis analyze_joint(const graph::Graph& joint, const JointInfo& info,
                            const std::vector<double>& node_budgets, double default_budget) {
  check_memory_budget(default_budget, "activation_memory_budget");
  JointAnalysis a;
  const auto& in = joint.inputs();
  const auto& out = joint.outputs();
  a.primals.assign(in.begin(), in.begin() + info.num_primals);
  a.tangents.assign(in.begin() + info.num_primals, in.end());
  a.fw_outputs.assign(out.begin(), out.begin() + info.num_fw_outputs);
  a.grads.assign(out.begin() + info.num_fw_outputs, out.end());

  const size_t n = joint.nodes().size();
  std::vector<bool> is_tangent(joint.values().size(), false);
  for (graph::ValueId t : a.tangents) is_tangent[t.index] = true;
  a.tangent_dependent.assign(n, false);
  for (size_t i = 0; i < n; ++i)
    for (const graph::NodeArg& arg : joint.nodes()[i].args)
      for (graph::ValueId v : graph::arg_values(arg)) {
        int32_t p = joint.value(v).producer;
        if (is_tangent[v.index] || (p >= 0 && a.tangent_dependent[p]))
          a.tangent_dependent[i] = true;
      }
  a.forward_required = needed_nodes(joint, a.fw_outputs);
  a.relevant = or_of(a.forward_required, needed_nodes(joint, a.grads));

  a.ban.assign(n, Ban::none);
  a.budget.assign(n, default_budget);
  for (size_t i = 0; i < n; ++i) {
    const graph::Node& node = joint.nodes()[i];
    if (a.relevant[i] && !a.tangent_dependent[i]) a.ban[i] = ban_of(node, a.forward_required[i]);
    if (i < node_budgets.size() && !std::isnan(node_budgets[i])) {
      check_memory_budget(node_budgets[i], "the MemoryBudgetGuard budget of node %" +
                                               joint.value(node.outputs.at(0)).name);
      a.budget[i] = node_budgets[i];
    }
  }

  // Distance to the backward, walking users in reverse order.
  std::vector<std::vector<size_t>> users(n);
  for (size_t i = 0; i < n; ++i) {
    if (!a.relevant[i]) continue;
    for (const graph::NodeArg& arg : joint.nodes()[i].args)
      for (graph::ValueId v : graph::arg_values(arg))
        if (int32_t p = joint.value(v).producer; p >= 0) users[p].push_back(i);
  }
  std::unordered_set<uint32_t> grad_values;
  for (graph::ValueId g : a.grads) grad_values.insert(g.index);
  a.dist_from_backward.assign(n, kFar);
  for (size_t i = n; i-- > 0;) {
    if (!a.relevant[i] || a.tangent_dependent[i]) continue;
    int& d = a.dist_from_backward[i];
    for (graph::ValueId v : joint.nodes()[i].outputs)
      if (grad_values.count(v.index)) d = 1;
    for (size_t u : users[i])
      d = std::min(d, a.tangent_dependent[u] ? 1 : a.dist_from_backward[u] + 1);
    d = std::min(d, kFar);
  }
  return a;
}

Cut solve_min_cut(const graph::Graph& joint, const JointAnalysis& a,
                  const std::vector<bool>& banned) {
  const size_t n = joint.nodes().size();
  auto in_flow = [&](size_t i) { return a.relevant[i] && !a.tangent_dependent[i]; };
  // Capacities: bytes x scale + a tie-break below one byte's worth, preferring values near their
  // backward use. The scale keeps the byte total exact (the tie-breaks of all values together
  // stay below `scale`) and is dropped if it could overflow. Byte totals beyond what MaxFlow can
  // add up (expanded views count their own elements, up to saturation) are shrunk in proportion.
  constexpr int64_t kMaxPenalty = 100;
  constexpr size_t kMaxTotal = static_cast<size_t>(MaxFlow::kInfinity / 4);
  size_t num_values = 0, total_bytes = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!in_flow(i)) continue;
    for (graph::ValueId v : joint.nodes()[i].outputs) {
      ++num_values;
      total_bytes = saturating_add(total_bytes, value_bytes(joint.value(v).meta));
    }
  }
  int64_t scale = static_cast<int64_t>(num_values + 1) * (kMaxPenalty + 1);
  if (total_bytes > 0 && static_cast<double>(total_bytes) * static_cast<double>(scale) >
                             static_cast<double>(kMaxTotal))
    scale = 1;
  const double shrink = total_bytes > kMaxTotal
                            ? static_cast<double>(kMaxTotal) / static_cast<double>(total_bytes)
                            : 1.0;
  auto capacity = [&](size_t bytes) {
    if (shrink == 1.0) return static_cast<int64_t>(bytes);
    return bytes == 0 ? int64_t{0}
                      : std::max<int64_t>(1, std::llround(static_cast<double>(bytes) * shrink));
  };

  constexpr size_t kSource = 0, kSink = 1;
  MaxFlow flow(2);
  std::vector<size_t> node_vertex(n, SIZE_MAX);
  std::unordered_map<uint32_t, std::pair<size_t, size_t>> value_vertices;  // value -> (in, out)
  for (size_t i = 0; i < n; ++i) {
    if (!in_flow(i)) continue;
    node_vertex[i] = flow.add_vertex();
    if (banned[i]) flow.add_edge(kSource, node_vertex[i], MaxFlow::kInfinity);
    int64_t penalty = scale == 1 ? 0 : std::clamp<int64_t>(a.dist_from_backward[i], 1, kMaxPenalty);
    for (graph::ValueId v : joint.nodes()[i].outputs) {
      size_t vin = flow.add_vertex(), vout = flow.add_vertex();
      value_vertices[v.index] = {vin, vout};
      flow.add_edge(node_vertex[i], vin, MaxFlow::kInfinity);
      flow.add_edge(vin, vout, capacity(value_bytes(joint.value(v).meta)) * scale + penalty);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (!a.relevant[i]) continue;
    size_t target = a.tangent_dependent[i] ? kSink : node_vertex[i];
    for (const graph::NodeArg& arg : joint.nodes()[i].args)
      for (graph::ValueId v : graph::arg_values(arg))
        if (auto it = value_vertices.find(v.index); it != value_vertices.end())
          flow.add_edge(it->second.second, target, MaxFlow::kInfinity);
  }
  for (graph::ValueId g : a.grads)
    if (auto it = value_vertices.find(g.index); it != value_vertices.end())
      flow.add_edge(it->second.second, kSink, MaxFlow::kInfinity);

  flow.max_flow(kSource, kSink);
  const std::vector<bool>& side = flow.source_side();
  Cut cut;
  for (const auto& [v, io] : value_vertices)
    if (side[io.first] && !side[io.second]) cut.saved.push_back(graph::ValueId{v});
  std::sort(cut.saved.begin(), cut.saved.end());
  for (graph::ValueId v : cut.saved)
    cut.bytes = saturating_add(cut.bytes, value_bytes(joint.value(v).meta));
  return cut;
}

bool saved_set_is_valid(const graph::Graph& joint, const JointAnalysis& a,
                        const std::vector<bool>& banned, const std::vector<graph::ValueId>& saved) {
  std::vector<bool> available(joint.values().size(), false);
  for (graph::ValueId v : a.primals) available[v.index] = true;
  for (graph::ValueId v : a.tangents) available[v.index] = true;
  for (graph::ValueId v : saved) available[v.index] = true;
  for (size_t i = 0; i < joint.nodes().size(); ++i) {
    const graph::Node& node = joint.nodes()[i];
    if (!a.relevant[i]) continue;
    bool args_available = true;
    for (const graph::NodeArg& arg : node.args)
      for (graph::ValueId v : graph::arg_values(arg))
        args_available = args_available && available[v.index];
    if (a.tangent_dependent[i] && !args_available) return false;
    if (args_available && (a.tangent_dependent[i] || !banned[i]))
      for (graph::ValueId v : node.outputs) available[v.index] = true;
  }
  for (graph::ValueId g : a.grads)
    if (!available[g.index]) return false;
  return true;
}

Partition build_partition(const graph::Graph& joint, const JointAnalysis& a,
                          const std::vector<graph::ValueId>& saved,
                          const std::vector<std::string>& reasons) {
  std::unordered_map<uint32_t, std::string> reason_of;
  for (size_t i = 0; i < saved.size(); ++i)
    reason_of[saved[i].index] = i < reasons.size() ? reasons[i] : "";
  // The primals the backward reads: walk back from the gradients, stopping at saved values.
  std::vector<bool> seen(joint.values().size(), false);
  std::vector<graph::ValueId> work(a.grads.begin(), a.grads.end());
  std::vector<graph::ValueId> all_saved(saved.begin(), saved.end());
  while (!work.empty()) {
    graph::ValueId v = work.back();
    work.pop_back();
    if (seen[v.index] || reason_of.count(v.index)) continue;
    seen[v.index] = true;
    int32_t p = joint.value(v).producer;
    if (p < 0) {
      if (a.is_primal(v)) all_saved.push_back(v);
      continue;
    }
    for (const graph::NodeArg& arg : joint.nodes()[p].args)
      for (graph::ValueId u : graph::arg_values(arg)) work.push_back(u);
  }
  std::sort(all_saved.begin(), all_saved.end());

  std::vector<std::string> all_reasons;
  for (graph::ValueId v : all_saved)
    all_reasons.push_back(joint.value(v).producer < 0 ? input_reason(joint, v)
                                                      : reason_of.at(v.index));
  JointInfo info{a.primals.size(), a.fw_outputs.size(), {}};
  Partition p = assemble_partition(joint, info, all_saved, all_reasons);
  place_recomputation_before_use(p.backward, all_saved.size());
  return p;
}

Partition min_cut_partition(const graph::Graph& joint, const JointInfo& info,
                            const PartitionOptions& options) {
  check_memory_budget(options.activation_memory_budget, "activation_memory_budget");
  graph::Graph g = joint;
  // The passes below renumber nodes; region budgets follow the values the nodes make.
  std::unordered_map<uint32_t, double> budget_of_value;
  for (size_t i = 0; i < info.node_budgets.size() && i < g.nodes().size(); ++i)
    for (graph::ValueId v : g.nodes()[i].outputs) budget_of_value[v.index] = info.node_budgets[i];
  eliminate_common_subexpressions(g);
  drop_shape_only_uses(g);
  std::vector<double> node_budgets(g.nodes().size(), std::nan(""));
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (graph::ValueId v : g.nodes()[i].outputs)
      if (auto it = budget_of_value.find(v.index); it != budget_of_value.end())
        node_budgets[i] = it->second;

  JointAnalysis a = analyze_joint(g, info, node_budgets, options.activation_memory_budget);
  SavedChoice choice = choose_saved_values(g, a);
  return build_partition(g, a, choice.saved, choice.reasons);
}

}  // namespace aotgrad::partition
