// Attention fusion (graph/fuse_attention.h). Reading guide: Matcher::match walks one composite
// backwards from its last product, through the weights to the first product and its operands;
// fuse_attention collects the matches, emits each fused node where the composite's last product
// stood, points that product's readers at it, and drops the composite's nodes.
#include "graph/fuse_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace aotgrad::graph {
namespace {

struct Match {
  size_t anchor = 0;             // the last product's node
  std::vector<size_t> nodes;     // the composite's nodes, all removed
  ValueId q, k, v;               // the row's operands; k may need a transpose (k_is_transposed)
  bool k_is_transposed = false;  // `k` is [*, D, S]: emit transpose(k, -2, -1)
  std::optional<ValueId> mask;
  double scale = 1.0;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g)
      : g_(g), uses_(g.values().size(), 0), user_(g.values().size(), 0) {
    for (size_t i = 0; i < g.nodes().size(); ++i)
      for (const NodeArg& a : g.nodes()[i].args)
        for (ValueId v : arg_values(a)) {
          ++uses_[v.index];
          user_[v.index] = i;
        }
    outputs_.assign(g.values().size(), false);
    for (ValueId v : g.outputs()) outputs_[v.index] = true;
  }

  // The node of the view that is v's only reader when it reshapes v to `sizes` and its result is
  // not a graph output (the fused result can stand in for it directly).
  std::optional<size_t> reshaped_to(ValueId v, const IntList& sizes) const {
    if (uses_[v.index] != 1 || outputs_[v.index]) return {};
    const Node& n = g_.nodes()[user_[v.index]];
    const bool view =
        n.op->name == "aten.view.default" || n.op->name == "aten._unsafe_view.default";
    if (!view || outputs_[n.outputs[0].index] || meta(n.outputs[0]).sizes != sizes) return {};
    return user_[v.index];
  }

  std::optional<Match> match(size_t anchor) const {
    const Node& last = g_.nodes()[anchor];
    if (last.op->name != "aten.bmm.default" || outputs_[last.outputs[0].index]) return {};
    // The fused rows take f32 and f64 only (bmm's operands share the result's dtype).
    const DType dtype = meta(last.outputs[0]).dtype;
    if (dtype != DType::f32 && dtype != DType::f64) return {};
    Match m{.anchor = anchor};
    m.nodes.push_back(anchor);
    // The weights: _softmax(s, -1) through shape-only steps.
    ValueId p = strip(value_arg(last, 0), m.nodes);
    const Node* softmax = only_producer(p, "aten._softmax.default");
    if (!softmax || !last_dim(std::get<int64_t>(softmax->args[1]), meta(p)) ||
        std::get<bool>(softmax->args[2]))
      return {};
    m.nodes.push_back(node_index(p));
    ValueId s = value_arg(*softmax, 0);
    if (const Node* fill = only_producer(s, "aten.masked_fill.Scalar")) {
      const double value = std::get<Scalar>(fill->args[2]).to_double();
      if (!(std::isinf(value) && value < 0) || meta(value_arg(*fill, 0)).sizes != meta(s).sizes)
        return {};
      m.mask = value_arg(*fill, 1);
      m.nodes.push_back(node_index(s));
      s = value_arg(*fill, 0);
    }
    if (const Node* scale = only_producer(s, "aten.mul.Scalar")) {
      m.scale = std::get<Scalar>(scale->args[1]).to_double();
      m.nodes.push_back(node_index(s));
      s = value_arg(*scale, 0);
    } else if (const Node* div = only_producer(s, "aten.div.Scalar")) {
      // A divisor whose reciprocal overflows f32 (below ~3e-39) is not a scale the kernel can
      // multiply by as the composite divides: leave it alone.
      const double divisor = std::get<Scalar>(div->args[1]).to_double();
      if (divisor != 0 && std::isfinite(divisor) &&
          !(std::abs(1.0 / divisor) <= std::numeric_limits<float>::max()))
        return {};
      m.scale = 1.0 / divisor;
      m.nodes.push_back(node_index(s));
      s = value_arg(*div, 0);
    }
    ValueId scores = strip(s, m.nodes);
    const Node* first = only_producer(scores, "aten.bmm.default");
    if (!first) return {};
    m.nodes.push_back(node_index(scores));
    return operands(std::move(m), *first, value_arg(last, 1), meta(p));
  }

 private:
  const ops::TensorMeta& meta(ValueId v) const { return g_.value(v).meta; }
  size_t node_index(ValueId v) const { return static_cast<size_t>(g_.value(v).producer); }

  static ValueId value_arg(const Node& n, size_t i) { return std::get<ValueId>(n.args[i]); }
  static bool last_dim(int64_t dim, const ops::TensorMeta& m) {
    const int64_t rank = static_cast<int64_t>(m.sizes.size());
    return dim == -1 || dim == rank - 1;
  }

  // v's producer when v has one reader (the composite's next step) and is not an output.
  const Node* single_use_producer(ValueId v) const {
    const int32_t p = g_.value(v).producer;
    if (p < 0 || uses_[v.index] != 1 || outputs_[v.index]) return nullptr;
    return &g_.nodes()[static_cast<size_t>(p)];
  }

  // single_use_producer(v) when it is `op`.
  const Node* only_producer(ValueId v, std::string_view op) const {
    const Node* n = single_use_producer(v);
    return n && n->op->name == op ? n : nullptr;
  }

  // Walks back from v through shape-only steps that keep the last two dims (views merging or
  // splitting batch dims, a no-op expand, a clone) whose results only the next step reads;
  // records their nodes. Returns the value the walk stops at.
  ValueId strip(ValueId v, std::vector<size_t>& nodes) const {
    for (;;) {
      const Node* producer = single_use_producer(v);
      if (!producer) return v;
      const Node& n = *producer;
      const std::string_view op = n.op->name;
      const bool view = op == "aten.view.default" || op == "aten._unsafe_view.default";
      if (!view && op != "aten.expand.default" && op != "aten.clone.default") return v;
      const ValueId in = value_arg(n, 0);
      const IntList &out_sizes = meta(v).sizes, &in_sizes = meta(in).sizes;
      if (op == "aten.expand.default" && out_sizes != in_sizes) return v;
      if (view &&
          (out_sizes.size() < 2 || in_sizes.size() < 2 ||
           out_sizes.end()[-1] != in_sizes.end()[-1] || out_sizes.end()[-2] != in_sizes.end()[-2]))
        return v;
      nodes.push_back(node_index(v));
      v = in;
    }
  }

  // The row's operands: the strided views behind the products' clones when all three have the
  // weights' batch dims, else the products' own operands.
  std::optional<Match> operands(Match m, const Node& first, ValueId v3,
                                const ops::TensorMeta& weights) const {
    const ValueId q3 = value_arg(first, 0), k3 = value_arg(first, 1);
    std::vector<size_t> chain;
    const ValueId q = strip(q3, chain), k = strip(k3, chain), v = strip(v3, chain);
    const IntList batch(weights.sizes.begin(), weights.sizes.end() - 2);
    auto has_batch = [&](ValueId x) {
      const IntList& s = meta(x).sizes;
      return s.size() == batch.size() + 2 && IntList(s.begin(), s.end() - 2) == batch;
    };
    if (has_batch(q) && has_batch(k) && has_batch(v)) {
      m.nodes.insert(m.nodes.end(), chain.begin(), chain.end());
      m.q = q, m.k = k, m.v = v;
    } else {
      if (m.mask && meta(*m.mask).sizes.size() > 2) return {};  // would not broadcast to [N, T, S]
      m.q = q3, m.v = v3, m.k = k3;
    }
    // k is [*, D, S]; when it is itself transpose(k', -2, -1), read k' [*, S, D].
    const int32_t p = g_.value(m.k).producer;
    const Node* t = p >= 0 ? &g_.nodes()[static_cast<size_t>(p)] : nullptr;
    const int64_t rank = static_cast<int64_t>(meta(m.k).sizes.size());
    auto wrapped = [&](const NodeArg& d) { return (std::get<int64_t>(d) % rank + rank) % rank; };
    if (t && t->op->name == "aten.transpose.int" &&
        std::min(wrapped(t->args[1]), wrapped(t->args[2])) == rank - 2 &&
        std::max(wrapped(t->args[1]), wrapped(t->args[2])) == rank - 1) {
      m.k = value_arg(*t, 0);
    } else {
      m.k_is_transposed = true;
    }
    return m;
  }

  const Graph& g_;
  std::vector<int> uses_;
  std::vector<size_t> user_;  // the last node reading each value
  std::vector<bool> outputs_;
};

ops::TensorMeta transposed(const ops::TensorMeta& m) {
  ops::TensorMeta t = m;
  std::swap(t.sizes.end()[-1], t.sizes.end()[-2]);
  std::swap(t.strides.end()[-1], t.strides.end()[-2]);
  return t;
}

// Appends `op` to g, then takes the node back out so the caller can place it; its results keep
// their values.
Node detached_node(Graph& g, const ops::OpDef& op, std::vector<NodeArg> args,
                   const std::vector<ops::TensorMeta>& metas,
                   const std::vector<std::string>& names = {}) {
  g.add_node(op, std::move(args), metas, names);
  Node n = std::move(g.mutable_nodes().back());
  g.mutable_nodes().pop_back();
  return n;
}

}  // namespace

AttentionFusion fuse_attention(Graph& g) {
  static const ops::OpDef& attention = ops::lookup("aotgrad.masked_attention.default");
  static const ops::OpDef& transpose = ops::lookup("aten.transpose.int");
  static const ops::OpDef& view = ops::lookup("aten.view.default");
  const size_t n_nodes = g.nodes().size();
  std::vector<bool> removed(n_nodes, false);
  std::map<size_t, std::vector<Node>> inserted;  // before original node i
  std::map<uint32_t, ValueId> replaced;          // a last product's result -> the fused one
  AttentionFusion result;
  const Matcher matcher(g);
  for (size_t i = 0; i < n_nodes; ++i) {
    std::optional<Match> m = matcher.match(i);
    if (!m) continue;
    bool overlaps = false;
    for (size_t n : m->nodes) overlaps = overlaps || removed[n];
    if (overlaps) continue;
    for (size_t n : m->nodes) removed[n] = true;
    std::vector<Node>& here = inserted[m->anchor];
    ValueId k = m->k;
    if (m->k_is_transposed) {
      here.push_back(detached_node(g, transpose, {k, int64_t{-2}, int64_t{-1}},
                                   {transposed(g.value(k).meta)}));
      k = here.back().outputs[0];
    }
    const ValueId old_out = g.nodes()[m->anchor].outputs[0];
    IntList sizes = g.value(m->q).meta.sizes;
    sizes.back() = g.value(m->v).meta.sizes.back();
    const DType dtype = g.value(m->q).meta.dtype;
    std::vector<NodeArg> args{m->q, k, m->v};
    if (m->mask)
      args.emplace_back(*m->mask);
    else
      args.emplace_back(std::monostate{});
    args.emplace_back(m->scale);
    here.push_back(detached_node(g, attention, std::move(args),
                                 {ops::TensorMeta::contiguous(sizes, dtype)},
                                 {"masked_attention"}));
    ValueId out = here.back().outputs[0];
    const ops::TensorMeta& old_meta = g.value(old_out).meta;
    if (std::optional<size_t> reshape = matcher.reshaped_to(old_out, sizes);
        reshape && old_meta.sizes != sizes && !removed[*reshape]) {
      // [N, T, Dv] viewed back as [B, H, T, Dv]: the fused result is that view's value, so the
      // backward gets the output gradient through no reshape (which would copy a strided one).
      removed[*reshape] = true;
      replaced[g.nodes()[*reshape].outputs[0].index] = out;
    } else if (old_meta.sizes != sizes) {
      here.push_back(detached_node(g, view, {out, old_meta.sizes}, {old_meta}));
      replaced[old_out.index] = here.back().outputs[0];
    } else {
      replaced[old_out.index] = out;
    }
    ++result.fused;
  }
  if (result.fused == 0) return result;

  auto remap = [&](ValueId& v) {
    if (auto it = replaced.find(v.index); it != replaced.end()) v = it->second;
  };
  std::vector<Node> nodes;
  for (size_t i = 0; i < n_nodes; ++i) {
    if (auto it = inserted.find(i); it != inserted.end())
      for (Node& n : it->second) {
        nodes.push_back(std::move(n));
        result.origin.push_back(i);
      }
    if (removed[i]) continue;
    nodes.push_back(std::move(g.mutable_nodes()[i]));
    result.origin.push_back(i);
  }
  for (Node& n : nodes) for_each_value(n.args, remap);
  for (ValueId& v : g.mutable_outputs()) remap(v);
  g.replace_nodes(std::move(nodes));
  return result;
}

}  // namespace aotgrad::graph
