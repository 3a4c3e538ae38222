#include "backends/cpp/schedule.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace aotgrad::backends::cpp {
namespace {

bool fusable_dtype(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::b8;
}

// Row-major with offset 0, ignoring the strides of size-1 dims (they are never stepped).
bool dense_row_major(const ops::TensorMeta& m) {
  if (m.storage_offset != 0) return false;
  if (m.strides.empty()) return true;
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
    if (m.sizes[d] != 1 && m.strides[d] != expected) return false;
    expected *= m.sizes[d];
  }
  return true;
}

bool broadcastable_to(const IntList& sizes, const IntList& shape) {
  if (sizes.size() > shape.size()) return false;
  size_t lead = shape.size() - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 && sizes[d] != shape[lead + d]) return false;
  return true;
}

// Operand index of a fusion-expression token: a/b/c -> tensor 0/1/2, sN -> scalar N.
int tensor_operand(const std::string& tok) {
  return tok.size() == 1 && tok[0] >= 'a' && tok[0] <= 'c' ? tok[0] - 'a' : -1;
}
int scalar_operand(const std::string& tok) {
  return tok.size() == 2 && tok[0] == 's' && std::isdigit(static_cast<unsigned char>(tok[1]))
             ? tok[1] - '0'
             : -1;
}

// The numeric value of a non-tensor argument, or nullopt for one (a dtype, a string, none) that
// an expression cannot use.
std::optional<double> numeric_arg(const graph::NodeArg& a) {
  if (const auto* s = std::get_if<Scalar>(&a)) return s->to_double();
  if (const auto* i = std::get_if<int64_t>(&a)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&a)) return *d;
  if (const auto* b = std::get_if<bool>(&a)) return *b ? 1.0 : 0.0;
  return std::nullopt;
}

// Collapses the kernel's loop dims: size-1 dims vanish, and two adjacent dims merge when every
// input (broadcast strides, as the graph's metadata gives them) steps through them as one.
// The runner checks the same condition on the actual tensors (and copies an input that breaks it).
void plan_loops(const graph::Graph& g, Kernel& k) {
  std::vector<IntList> in_strides;
  for (const KernelInput& in : k.inputs) {
    const ops::TensorMeta& m = g.value(graph::ValueId{in.value}).meta;
    IntList st = m.strides.empty() ? contiguous_strides(m.sizes) : m.strides;
    in_strides.push_back(broadcast_strides(m.sizes, st, k.shape));
  }
  // An output written into a cat's slice steps through the dims as its strides say, too.
  for (const CatTarget& t : k.out_cat)
    if (t.cat >= 0) in_strides.push_back(t.strides);
  for (int64_t d = 0; d < static_cast<int64_t>(k.shape.size()); ++d) {
    if (k.shape[d] == 1) continue;
    // A reduction walks the last dim as its own loop.
    bool merge = !k.dim_groups.empty() &&
                 !(k.reduction != Reduction::none && d + 1 == static_cast<int64_t>(k.shape.size()));
    if (merge) {
      int64_t prev = k.dim_groups.back().back();
      for (const IntList& st : in_strides)
        if (st[prev] != st[d] * k.shape[d]) merge = false;
    }
    if (merge)
      k.dim_groups.back().push_back(d);
    else
      k.dim_groups.push_back({d});
  }
  if (k.dim_groups.empty()) k.dim_groups.push_back({});
  for (size_t i = 0; i < k.inputs.size(); ++i) {
    const IntList& last = k.dim_groups.back();
    int64_t s = last.empty() ? 0 : in_strides[i][last.back()];
    k.inputs[i].inner = s == 0 ? InnerStride::zero : s == 1 ? InnerStride::unit : InnerStride::any;
  }
  for (CatTarget& t : k.out_cat) {
    if (t.cat < 0) continue;
    IntList collapsed;
    for (const IntList& dims : k.dim_groups)
      collapsed.push_back(dims.empty() ? 0 : t.strides[dims.back()]);
    t.strides = std::move(collapsed);
  }
}

}  // namespace

std::vector<std::string> expr_tokens(std::string_view expr) {
  std::vector<std::string> out;
  for (size_t i = 0; i < expr.size();) {
    auto ident = [&](size_t j) {
      return std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_';
    };
    if (ident(i)) {
      size_t j = i;
      while (j < expr.size() && ident(j)) ++j;
      out.emplace_back(expr.substr(i, j - i));
      i = j;
    } else {
      out.emplace_back(1, expr[i++]);
    }
  }
  return out;
}

IntList broadcast_strides(const IntList& sizes, const IntList& strides, const IntList& shape) {
  IntList out(shape.size(), 0);
  size_t lead = shape.size() - sizes.size();
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1 && shape[lead + d] != 1) out[lead + d] = strides[d];
  return out;
}

Reduction fusable_reduction(const graph::Graph& g, const graph::Node& n) {
  const std::string_view name = n.op->name;
  Reduction r = name == "aten.sum.dim_IntList"        ? Reduction::sum
                : name == "aten.mean.dim"             ? Reduction::mean
                : name == "aten.amax.default"         ? Reduction::amax
                : name == "aten._softmax.default"     ? Reduction::softmax
                : name == "aten._log_softmax.default" ? Reduction::log_softmax
                                                      : Reduction::none;
  if (name == "aten.sum.default" && n.outputs.size() == 1 && n.args.size() == 2 &&
      std::holds_alternative<std::monostate>(n.args[1])) {
    const auto* in = std::get_if<graph::ValueId>(&n.args[0]);
    if (!in) return Reduction::none;
    const ops::TensorMeta& x = g.value(*in).meta;
    const bool small_1d = x.sizes.size() == 1 && x.sizes[0] > 1 && x.sizes[0] <= kFullSumLimit;
    return small_1d && (x.dtype == DType::f32 || x.dtype == DType::f64) &&
                   g.value(n.outputs[0]).meta.dtype == x.dtype
               ? Reduction::sum
               : Reduction::none;
  }
  if (r == Reduction::none || n.outputs.size() != 1) return Reduction::none;
  const auto* in = std::get_if<graph::ValueId>(&n.args[0]);
  if (!in) return Reduction::none;
  const ops::TensorMeta& x = g.value(*in).meta;
  const ops::TensorMeta& out = g.value(n.outputs[0]).meta;
  const int64_t rank = static_cast<int64_t>(x.sizes.size());
  if ((x.dtype != DType::f32 && x.dtype != DType::f64) || out.dtype != x.dtype || rank == 0 ||
      x.sizes.back() <= 1 || !dense_row_major(out))
    return Reduction::none;
  auto is_last = [&](int64_t d) { return d == -1 || d == rank - 1; };
  if (r == Reduction::softmax || r == Reduction::log_softmax) {
    const auto* dim = std::get_if<int64_t>(&n.args[1]);
    const auto* half = std::get_if<bool>(&n.args[2]);
    return dim && is_last(*dim) && half && !*half ? r : Reduction::none;
  }
  const auto* dims = std::get_if<IntList>(&n.args[1]);
  if (!dims || dims->size() != 1 || !is_last(dims->front())) return Reduction::none;
  if (r != Reduction::amax && !std::holds_alternative<std::monostate>(n.args[3]))
    return Reduction::none;  // a dtype argument: leave the conversion to the eager kernel
  return r;
}

bool is_fusable(const graph::Graph& g, const graph::Node& n) {
  const ops::OpDef& op = *n.op;
  if (op.fusion_expr.empty() || op.is_view() || op.is_inplace() || n.outputs.size() != 1)
    return false;
  const ops::TensorMeta& out = g.value(n.outputs[0]).meta;
  if (!fusable_dtype(out.dtype) || !dense_row_major(out)) return false;
  const auto& schema = op.parsed_schema().args;
  if (schema.size() != n.args.size()) return false;
  int tensors = 0, scalars = 0;
  std::vector<bool> scalar_ok;
  bool float_input = false;
  for (size_t k = 0; k < n.args.size(); ++k) {
    if (schema[k].type == ops::ArgType::tensor_list) return false;
    if (schema[k].type == ops::ArgType::tensor) {
      const auto* v = std::get_if<graph::ValueId>(&n.args[k]);
      if (!v) return false;
      const ops::TensorMeta& m = g.value(*v).meta;
      if (!fusable_dtype(m.dtype) || !broadcastable_to(m.sizes, out.sizes)) return false;
      float_input |= m.dtype != DType::b8;
      ++tensors;
    } else {
      scalar_ok.push_back(numeric_arg(n.args[k]).has_value());
      ++scalars;
    }
  }
  if (out.dtype == DType::b8 && !float_input) return false;
  for (const std::string& tok : expr_tokens(op.fusion_expr)) {
    if (int t = tensor_operand(tok); t >= 0 && t >= tensors) return false;
    if (int s = scalar_operand(tok); s >= 0 && (s >= scalars || !scalar_ok[s])) return false;
  }
  return true;
}

namespace {

// Fills each kernel's inputs (values read from outside it), outputs (values needed outside it:
// by another step or as graph outputs; a reduction's result last); loops are planned later.
void connect_kernels(const graph::Graph& g, const ValueUses& uses, const std::vector<int>& group_of,
                     const std::vector<int32_t>& folded_from, Schedule& sched) {
  const auto& nodes = g.nodes();
  const auto& [users, is_output] = uses;
  std::vector<int> kernel_of_node(nodes.size(), -1);
  for (size_t k = 0; k < sched.kernels.size(); ++k) {
    for (uint32_t i : sched.kernels[k].nodes) kernel_of_node[i] = static_cast<int>(k);
    if (sched.kernels[k].reduction_node >= 0)
      kernel_of_node[sched.kernels[k].reduction_node] = static_cast<int>(k);
  }
  for (size_t k = 0; k < sched.kernels.size(); ++k) {
    Kernel& kern = sched.kernels[k];
    for (uint32_t i : kern.nodes) {
      for (const graph::NodeArg& a : nodes[i].args)
        for (graph::ValueId v : graph::arg_values(a)) {
          if (group_of[v.index] == static_cast<int>(k)) continue;
          bool seen = std::any_of(kern.inputs.begin(), kern.inputs.end(),
                                  [&](const KernelInput& in) { return in.value == v.index; });
          if (!seen) kern.inputs.push_back({v.index, InnerStride::any});
        }
      uint32_t out = nodes[i].outputs[0].index;
      bool outside =
          is_output[out] || std::any_of(users[out].begin(), users[out].end(), [&](uint32_t u) {
            return kernel_of_node[u] != static_cast<int>(k);
          });
      if (outside) kern.outputs.push_back(out);
    }
    if (kern.reduction_node >= 0) {
      graph::ValueId in = std::get<graph::ValueId>(nodes[kern.reduction_node].args[0]);
      bool inside = group_of[in.index] == static_cast<int>(k) &&
                    std::find(kern.nodes.begin(), kern.nodes.end(),
                              static_cast<uint32_t>(g.value(in).producer)) != kern.nodes.end();
      bool seen = std::any_of(kern.inputs.begin(), kern.inputs.end(),
                              [&](const KernelInput& x) { return x.value == in.index; });
      if (!inside && !seen) kern.inputs.push_back({in.index, InnerStride::any});
      kern.outputs.push_back(nodes[kern.reduction_node].outputs[0].index);
    }
    for (KernelInput& in : kern.inputs) {
      in.read_from = in.value;
      if (int32_t src = folded_from[in.value]; src >= 0) {
        in.read_from = static_cast<uint32_t>(src);
        in.folded_node = g.value(graph::ValueId{in.value}).producer;
      }
    }
  }
}

// Per value: the source of the `expand` producing it when that expand is folded into its users
// (all of them pointwise nodes or fusable reductions outside any GEMM fusion, the view not a graph
// output), else -1.
std::vector<int32_t> folded_expands(const graph::Graph& g, const ValueUses& uses,
                                    const std::vector<int>& gemm_of_node) {
  const auto& nodes = g.nodes();
  const auto& [users, is_output] = uses;
  std::vector<int32_t> from(g.values().size(), -1);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const graph::Node& n = nodes[i];
    if (n.op->name != "aten.expand.default" || n.outputs.size() != 1 || gemm_of_node[i] >= 0)
      continue;
    const auto* src = std::get_if<graph::ValueId>(&n.args[0]);
    const uint32_t out = n.outputs[0].index;
    if (!src || is_output[out] || users[out].empty() ||
        !broadcastable_to(g.value(*src).meta.sizes, g.value(n.outputs[0]).meta.sizes))
      continue;
    const bool all_fused = std::all_of(users[out].begin(), users[out].end(), [&](uint32_t u) {
      return gemm_of_node[u] < 0 &&
             (is_fusable(g, nodes[u]) || fusable_reduction(g, nodes[u]) != Reduction::none);
    });
    if (all_fused) from[out] = static_cast<int32_t>(src->index);
  }
  return from;
}

}  // namespace

Schedule schedule_graph(const graph::Graph& g, bool gemm_epilogues, bool cat_fusion,
                        bool conv_epilogues, std::vector<AttentionPair> attention_pairs) {
  Schedule sched;
  const auto& nodes = g.nodes();
  std::vector<int32_t> pair_of(nodes.size(), -1);  // per node: its attention pair, or -1
  for (size_t p = 0; p < attention_pairs.size(); ++p) {
    pair_of[attention_pairs[p].forward] = static_cast<int32_t>(p);
    pair_of[attention_pairs[p].backward] = static_cast<int32_t>(p);
  }
  sched.attention_pairs = std::move(attention_pairs);
  std::vector<int> group_of(g.values().size(), -1);  // kernel producing each value
  std::vector<bool> emitted;
  std::map<IntList, int> open;  // shape -> open kernel
  auto close = [&](int k) {
    if (emitted[k]) return;
    emitted[k] = true;
    if (auto it = open.find(sched.kernels[k].shape); it != open.end() && it->second == k)
      open.erase(it);
    sched.steps.push_back({true, static_cast<uint32_t>(k)});
  };
  auto new_kernel = [&](const IntList& shape) {
    if (auto it = open.find(shape); it != open.end()) close(it->second);  // early is always legal
    int k = static_cast<int>(sched.kernels.size());
    sched.kernels.emplace_back();
    sched.kernels.back().name = "kernel" + std::to_string(k);
    sched.kernels.back().shape = shape;
    emitted.push_back(false);
    open[shape] = k;
    return k;
  };
  auto close_all = [&] {
    std::vector<int> ks;
    for (auto& [shape, k] : open) ks.push_back(k);
    std::sort(ks.begin(), ks.end());
    for (int k : ks) close(k);
  };
  const ValueUses uses = value_uses(g);
  if (gemm_epilogues) sched.gemms = find_gemm_fusions(g, uses, conv_epilogues);
  std::vector<int> gemm_of_node(nodes.size(), -1);
  for (size_t f = 0; f < sched.gemms.size(); ++f)
    for (uint32_t i : sched.gemms[f].nodes) gemm_of_node[i] = static_cast<int>(f);
  const std::vector<int32_t> folded_from = folded_expands(g, uses, gemm_of_node);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    const graph::Node& n = nodes[i];
    if (n.outputs.size() == 1 && folded_from[n.outputs[0].index] >= 0) continue;  // no step
    if (int f = gemm_of_node[i]; f >= 0) {
      const GemmFusion& gf = sched.gemms[f];
      if (i != gf.nodes.back()) continue;  // the fused step runs at its last node
      for (int64_t v : {gf.bias, int64_t{gf.a}, int64_t{gf.b}, gf.residual})
        if (v >= 0 && group_of[v] >= 0) close(group_of[v]);
      sched.steps.push_back({false, static_cast<uint32_t>(f), true});
      continue;
    }
    if (n.op->is_inplace()) close_all();
    if (Reduction r = fusable_reduction(g, n); r != Reduction::none) {
      graph::ValueId in = std::get<graph::ValueId>(n.args[0]);
      const IntList& shape = g.value(in).meta.sizes;
      // A folded expand is read from its source's buffer: that kernel must have run.
      if (int32_t src = folded_from[in.index]; src >= 0 && group_of[src] >= 0) close(group_of[src]);
      int mine = group_of[in.index];
      if (mine < 0 || emitted[mine] || sched.kernels[mine].shape != shape) {
        if (mine >= 0) close(mine);
        mine = new_kernel(shape);
      }
      sched.kernels[mine].reduction = r;
      sched.kernels[mine].reduction_node = static_cast<int32_t>(i);
      group_of[n.outputs[0].index] = mine;
      close(mine);
      continue;
    }
    if (int32_t p = pair_of[i]; p >= 0 && sched.attention_pairs[p].forward == i) continue;
    if (!is_fusable(g, n)) {
      for (const graph::NodeArg& a : n.args)
        for (graph::ValueId v : graph::arg_values(a))
          if (group_of[v.index] >= 0) close(group_of[v.index]);
      sched.steps.push_back({false, i});
      sched.steps.back().attention_pair = pair_of[i];  // the paired forward runs here too
      continue;
    }
    const IntList& shape = g.value(n.outputs[0]).meta.sizes;
    auto it = open.find(shape);
    int mine = it == open.end() ? -1 : it->second;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) {
        if (group_of[v.index] >= 0 && group_of[v.index] != mine) close(group_of[v.index]);
        // A folded expand is read from its source's buffer, so the kernel computing the source
        // must have run, even when it is this node's own open kernel.
        if (int32_t src = folded_from[v.index]; src >= 0 && group_of[src] >= 0)
          close(group_of[src]);
      }
    if (mine < 0 || emitted[mine]) mine = new_kernel(shape);
    Kernel& k = sched.kernels[mine];
    k.nodes.push_back(i);
    k.scalar_base.push_back(static_cast<uint32_t>(k.scalars.size()));
    const auto& schema = n.op->parsed_schema().args;
    for (size_t a = 0; a < n.args.size(); ++a)
      if (schema[a].type != ops::ArgType::tensor)
        k.scalars.push_back(numeric_arg(n.args[a]).value_or(0.0));
    group_of[n.outputs[0].index] = mine;
  }
  close_all();
  connect_kernels(g, uses, group_of, folded_from, sched);
  if (cat_fusion) fuse_cats(g, uses, sched);
  for (Kernel& k : sched.kernels) plan_loops(g, k);
  return sched;
}

}  // namespace aotgrad::backends::cpp
