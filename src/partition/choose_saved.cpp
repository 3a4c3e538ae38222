// Reading guide: choose_saved_values() solves the runtime-optimal cut and the fully relaxed one,
// then walks each budget group (GroupWalk). The walk is what makes saved bytes monotone.
//
// Knapsack items are the group's compute-heavy forward nodes (knapsack_items): an item's value
// is the recompute time giving it up alone would add (cost_model.h's estimate, which counts the
// memory traffic of the pointwise ops recomputed along with it) and its weight the bytes that
// sheds, better estimates than the node's own FLOPs and output size: a result the backward needs
// anyway costs nothing to keep.
//
// Why a walk: the knapsack's optimal packings for neighbouring capacities need not nest, so
// "solve the knapsack at this budget, unban what it gives up, take the min cut" can save more
// bytes at a smaller budget than at a larger one. GroupWalk instead goes down every quantized
// capacity from the top (budget 1) to 0, keeping a current cut whose bytes never increase: at
// each capacity it moves to the knapsack's packing there if that cut is no larger, keeps the
// current cut while it still fits that capacity's bound, and otherwise unbans the union of both
// (which can only shrink the cut); if the cut still exceeds the bound (the weights are
// estimates), it gives up more nodes, cheapest recompute per byte first.
//
// The walk alone can get stuck: having shrunk the cut below the bound for one capacity, it never
// grows it again, so at a lower capacity it may recompute more than a larger cut that still fits
// (one transformer block at budget 0.5: it recomputed the MLP's first product, 0.54 GFLOP, where
// the qkv product, 0.40, shed as much). So the answer is not the walk's last cut: every cut the
// walk visits and every knapsack packing's cut is a candidate, and the result is the candidate
// with the least estimated recompute time (then the fewest bytes, then the first visited) among
// those within the requested budget's bound. The candidates do not depend on the requested
// budget, so the result's bytes are monotone in it: were budget b1 > b2 to give fewer bytes than
// b2, b1's answer would fit b2's bound too, and one of the two would not be the least.
#include "partition/choose_saved.h"

#include <cmath>
#include <functional>
#include <map>
#include <sstream>

#include "partition/cost_model.h"
#include "partition/knapsack.h"
#include "tensor/checked_math.h"

namespace aotgrad::partition {
namespace {

// Capacity quantization of the knapsack (PyTorch's dp solver uses the same): 0.01% of the
// budget span per unit, fine enough that weights rounded to units rarely change a packing.
constexpr size_t kLevels = 10000;

std::vector<bool> bans(const JointAnalysis& a, const std::vector<bool>& unbanned) {
  std::vector<bool> b(a.ban.size());
  for (size_t i = 0; i < b.size(); ++i) b[i] = a.ban[i] != Ban::none && !unbanned[i];
  return b;
}

// Bytes of the values in `cut` made by nodes whose budget is `budget`.
size_t bytes_in_group(const graph::Graph& g, const JointAnalysis& a, const Cut& cut,
                      double budget) {
  size_t total = 0;
  for (graph::ValueId v : cut.saved)
    if (a.budget[g.value(v).producer] == budget)
      total = saturating_add(total, value_bytes(g.value(v).meta));
  return total;
}

struct Group {
  double budget;
  std::vector<size_t> nodes;  // compute-heavy forward nodes governed by `budget`
};

// Estimated time the backward spends recomputing forward nodes when `cut` is saved.
double recompute_seconds(const graph::Graph& g, const JointAnalysis& a, const Cut& cut) {
  std::vector<bool> saved(g.values().size(), false);
  for (graph::ValueId v : cut.saved) saved[v.index] = true;
  std::vector<graph::ValueId> work(a.grads.begin(), a.grads.end());
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (a.relevant[i] && a.tangent_dependent[i])
      for (const graph::NodeArg& arg : g.nodes()[i].args)
        for (graph::ValueId v : graph::arg_values(arg)) work.push_back(v);
  std::vector<bool> recomputed(g.nodes().size(), false);
  double total = 0;
  while (!work.empty()) {
    graph::ValueId v = work.back();
    work.pop_back();
    int32_t p = g.value(v).producer;
    if (saved[v.index] || p < 0 || a.tangent_dependent[p] || recomputed[p]) continue;
    recomputed[p] = true;
    total += estimate_seconds(g, g.nodes()[p]);
    for (const graph::NodeArg& arg : g.nodes()[p].args)
      for (graph::ValueId u : graph::arg_values(arg)) work.push_back(u);
  }
  return total;
}

// The knapsack items for the group's nodes, from the current cut and the cut with each node
// alone given up. Weight: the bytes that sheds (a product whose result the backward needs anyway,
// like the last layer's before an MSE loss, costs nothing to keep), scaled so that the weights
// sum to about kLevels; the nodes' output bytes instead when no single node sheds anything.
// Value: the recompute time it adds, which counts the cheap ops recomputed along with the node
// (a LayerNorm before a matmul), not just the node's own FLOPs.
std::vector<KnapsackItem> knapsack_items(const graph::Graph& g, const JointAnalysis& a,
                                         const std::vector<size_t>& nodes, const Cut& cur,
                                         const std::function<Cut(size_t)>& cut_without) {
  const double base_seconds = recompute_seconds(g, a, cur);
  std::vector<double> shed(nodes.size(), 0.0);
  std::vector<KnapsackItem> items(nodes.size());
  double total = 0;
  for (size_t k = 0; k < nodes.size(); ++k) {
    Cut c = cut_without(k);
    shed[k] = c.bytes < cur.bytes ? static_cast<double>(cur.bytes - c.bytes) : 0.0;
    total += shed[k];
    items[k].value = std::max(recompute_seconds(g, a, c) - base_seconds,
                              estimate_seconds(g, g.nodes()[nodes[k]]));
  }
  if (total == 0) {
    for (size_t k = 0; k < nodes.size(); ++k) {
      for (graph::ValueId v : g.nodes()[nodes[k]].outputs) shed[k] += value_bytes(g.value(v).meta);
      total += shed[k];
    }
  }
  for (size_t k = 0; k < nodes.size() && total > 0; ++k)
    items[k].weight = static_cast<size_t>(std::llround(shed[k] / total * kLevels));
  return items;
}

// The walk down one group's quantized capacities (see the file comment). `unbanned` holds the
// decisions of the groups walked before; the walk adds its own when done.
class GroupWalk {
 public:
  GroupWalk(const graph::Graph& g, const JointAnalysis& a, const Group& group,
            std::vector<bool>& unbanned, Cut start)
      : g_(g),
        a_(a),
        group_(group),
        unbanned_(unbanned),
        cur_(std::move(start)),
        given_up_(group.nodes.size(), false) {}

  // Walks every capacity from the top down to 0; returns the best candidate for the group's
  // budget (see the file comment).
  Cut run(size_t max_g, size_t min_g) {
    const size_t m = group_.nodes.size();
    if (group_.budget == 0.0) {
      given_up_.assign(m, true);
      return finish(cut_with(given_up_));
    }
    if (max_g <= min_g) return finish(cur_);  // nothing to gain: keep everything
    const double unit = static_cast<double>(max_g - min_g) / kLevels;
    items_ = knapsack_items(g_, a_, group_.nodes, cur_, [&](size_t k) {
      std::vector<bool> one(m, false);
      one[k] = true;
      return cut_with(one);
    });
    Knapsack knapsack(items_, kLevels);
    const double start_bytes = static_cast<double>(cur_.bytes);
    consider(cur_, given_up_);
    std::vector<bool> packing_gives_up;
    Cut packing_cut;
    for (size_t c = kLevels;; --c) {
      std::vector<bool> taken = knapsack.packing(c);
      std::vector<bool> gives_up(m);
      for (size_t k = 0; k < m; ++k) gives_up[k] = !taken[k];
      if (gives_up != packing_gives_up) {
        packing_gives_up = gives_up;
        packing_cut = cut_with(gives_up);
        consider(packing_cut, gives_up);
      }
      const double limit = start_bytes - static_cast<double>(kLevels - c) * unit;
      if (gives_up != given_up_) step(gives_up, packing_cut, limit);
      fit(limit);
      consider(cur_, given_up_);
      if (c == 0) break;
    }
    const size_t lowest = static_cast<size_t>(std::floor(group_.budget * kLevels));
    const Candidate& best = choose(start_bytes - static_cast<double>(kLevels - lowest) * unit);
    given_up_ = best.given_up;
    return finish(best.cut);
  }

 private:
  struct Candidate {
    Cut cut;
    std::vector<bool> given_up;
    double seconds;  // estimated recompute time
  };

  // Records a cut the walk visited or a packing produced, once per set of given-up nodes.
  void consider(const Cut& cut, const std::vector<bool>& given_up) {
    for (const Candidate& c : candidates_)
      if (c.given_up == given_up) return;
    candidates_.push_back({cut, given_up, recompute_seconds(g_, a_, cut)});
  }

  // The candidate with the least estimated recompute time within `limit` bytes (then the fewest
  // bytes, then the first recorded); when none fits, the one with the fewest bytes.
  const Candidate& choose(double limit) const {
    const Candidate* best = nullptr;
    for (const Candidate& c : candidates_) {
      if (static_cast<double>(c.cut.bytes) > limit) continue;
      if (!best || c.seconds < best->seconds ||
          (c.seconds == best->seconds && c.cut.bytes < best->cut.bytes))
        best = &c;
    }
    if (best) return *best;
    for (const Candidate& c : candidates_)
      if (!best || c.cut.bytes < best->cut.bytes) best = &c;
    return *best;
  }

  Cut cut_with(const std::vector<bool>& give_up) const {
    std::vector<bool> u = unbanned_;
    for (size_t k = 0; k < give_up.size(); ++k)
      u[group_.nodes[k]] = u[group_.nodes[k]] || give_up[k];
    return solve_min_cut(g_, a_, bans(a_, u));
  }

  double kept_value(const std::vector<bool>& give_up) const {
    double v = 0;
    for (size_t k = 0; k < items_.size(); ++k)
      if (!give_up[k]) v += items_[k].value;
    return v;
  }

  // Moves to the knapsack's packing at this capacity when its cut is no larger; else keeps the
  // current cut while it fits, or gives up the union of both.
  void step(const std::vector<bool>& gives_up, const Cut& packing_cut, double limit) {
    if (packing_cut.bytes < cur_.bytes ||
        (packing_cut.bytes == cur_.bytes && kept_value(gives_up) >= kept_value(given_up_))) {
      given_up_ = gives_up;
      cur_ = packing_cut;
    } else if (static_cast<double>(cur_.bytes) > limit) {
      for (size_t k = 0; k < given_up_.size(); ++k) given_up_[k] = given_up_[k] || gives_up[k];
      cur_ = cut_with(given_up_);
    }
  }

  // The weights only estimate what each node adds to the cut; where the estimate was short,
  // gives up the kept node with the least recompute time per unit of weight until the cut fits.
  void fit(double limit) {
    auto per_unit = [&](size_t k) {
      return items_[k].value / static_cast<double>(std::max<size_t>(items_[k].weight, 1));
    };
    while (static_cast<double>(cur_.bytes) > limit) {
      size_t cheapest = given_up_.size();
      for (size_t k = 0; k < given_up_.size(); ++k)
        if (!given_up_[k] && (cheapest == given_up_.size() || per_unit(k) < per_unit(cheapest)))
          cheapest = k;
      if (cheapest == given_up_.size()) return;
      given_up_[cheapest] = true;
      cur_ = cut_with(given_up_);
    }
  }

  Cut finish(Cut cut) {
    for (size_t k = 0; k < given_up_.size(); ++k)
      if (given_up_[k]) unbanned_[group_.nodes[k]] = true;
    return cut;
  }

  const graph::Graph& g_;
  const JointAnalysis& a_;
  const Group& group_;
  std::vector<bool>& unbanned_;
  Cut cur_;
  std::vector<bool> given_up_;
  std::vector<KnapsackItem> items_;
  std::vector<Candidate> candidates_;
};

// The node whose result `node`'s result is, seen through views (a saved transpose of a matmul
// result is there because of the matmul).
size_t view_origin(const graph::Graph& g, size_t node) {
  while (g.nodes()[node].op->is_view()) {
    const graph::NodeArg& base = g.nodes()[node].args.at(g.nodes()[node].op->view_of_arg());
    const auto* v = std::get_if<graph::ValueId>(&base);
    if (!v || g.value(*v).producer < 0) break;
    node = static_cast<size_t>(g.value(*v).producer);
  }
  return node;
}

std::string reason_for(const graph::Graph& g, const JointAnalysis& a,
                       const std::vector<bool>& unbanned, size_t node) {
  const size_t origin = view_origin(g, node);
  const std::string of =
      origin == node ? ""
                     : " (a view of the result of " + std::string(g.nodes()[origin].op->name) + ")";
  std::ostringstream os;
  switch (a.ban[origin]) {
    case Ban::random:
      return "random op: a recomputed draw would differ (RNG state is not functionalized)" + of;
    case Ban::effectful:
      return "effectful op: never recomputed" + of;
    case Ban::compute_heavy:
      if (unbanned[origin]) break;
      if (a.budget[origin] < 1.0) {
        os << "cheaper to save than recompute under budget " << a.budget[origin]
           << ": recomputing costs ~" << std::llround(estimate_flops(g, g.nodes()[origin]) / 1e6)
           << " MFLOP" << of;
        return os.str();
      }
      return "compute-heavy producer: not recomputed at budget 1" + of;
    case Ban::none:
      break;
  }
  return "min-cut edge: fewer bytes than what recomputing it would need" + of;
}

}  // namespace

SavedChoice choose_saved_values(const graph::Graph& g, const JointAnalysis& a) {
  const size_t n = g.nodes().size();
  std::vector<bool> unbanned(n, false);
  Cut optimal = solve_min_cut(g, a, bans(a, unbanned));

  // Compute-heavy forward nodes the backward reaches, grouped by budget, highest first.
  std::map<double, std::vector<size_t>, std::greater<>> by_budget;
  std::vector<bool> relaxed_unbanned(n, false);
  for (size_t i = 0; i < n; ++i) {
    if (a.ban[i] != Ban::compute_heavy || a.dist_from_backward[i] >= (1 << 20) ||
        a.budget[i] >= 1.0)
      continue;
    relaxed_unbanned[i] = true;
    by_budget[a.budget[i]].push_back(i);
  }
  Cut relaxed = by_budget.empty() ? optimal : solve_min_cut(g, a, bans(a, relaxed_unbanned));

  Cut cur = optimal;
  for (const auto& [budget, nodes] : by_budget) {
    Group group{budget, nodes};
    cur = GroupWalk(g, a, group, unbanned, cur)
              .run(bytes_in_group(g, a, optimal, budget), bytes_in_group(g, a, relaxed, budget));
  }

  SavedChoice choice;
  choice.saved = cur.saved;
  choice.bytes = cur.bytes;
  choice.max_bytes = optimal.bytes;
  choice.min_bytes = relaxed.bytes;
  for (graph::ValueId v : cur.saved)
    choice.reasons.push_back(reason_for(g, a, unbanned, g.value(v).producer));
  return choice;
}

}  // namespace aotgrad::partition
