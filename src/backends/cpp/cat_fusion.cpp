#include "backends/cpp/cat_fusion.h"

#include <algorithm>
#include <numeric>

#include "backends/cpp/schedule.h"

namespace aotgrad::backends::cpp {
namespace {

int64_t product(const IntList& sizes, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= sizes[d];
  return p;
}

bool contiguous_meta(const ops::TensorMeta& m) {
  return m.storage_offset == 0 && (m.strides.empty() || m.strides == contiguous_strides(m.sizes));
}

// The strides, per dim of `shape`, of a contiguous tensor of `shape` reshaped to `part` and
// placed in `cat` (contiguous) along `dim` (rows of prod(part[dim..]) elements, `cat_row` apart).
// Empty when the reshape does not split at a row boundary, or the last stepped dim of `shape`
// would not have unit stride.
IntList slice_strides(const IntList& shape, const IntList& part, const IntList& cat, size_t dim) {
  const int64_t row = product(part, dim, part.size());
  const int64_t cat_row = product(cat, dim, cat.size());
  size_t e = shape.size() + 1;
  for (size_t j = 0; j <= shape.size(); ++j)
    if (product(shape, j, shape.size()) == row) {
      e = j;
      break;
    }
  if (e > shape.size()) return {};
  for (size_t j = shape.size(); j-- > 0;)
    if (shape[j] != 1) {
      if (j < e) return {};
      break;
    }
  IntList st(shape.size());
  for (size_t j = 0; j < shape.size(); ++j)
    st[j] = j >= e ? product(shape, j + 1, shape.size()) : cat_row * product(shape, j + 1, e);
  return st;
}

struct Uses : ValueUses {
  std::vector<int> extern_step;  // per node: its extern step, or -1
};

// Whether value `v` is read by one node only and is not a graph output.
bool single_use(const Uses& u, uint32_t v) {
  return u.users[v].size() == 1 && !u.is_output[v];
}

// Fills `part` as written by an attention backward when kernel `kern` is one clone of a
// transpose of that backward's gradient (see cat_fusion.h); `strides` are the clone result's in
// the cat.
void find_attention_part(const graph::Graph& g, const Uses& u, const Kernel& kern,
                         const IntList& strides, std::vector<uint32_t>& chain, CatPart& part) {
  if (kern.nodes.size() != 1 || kern.inputs.size() != 1 || kern.outputs.size() != 1 ||
      kern.inputs[0].folded_node >= 0 || g.nodes()[kern.nodes[0]].op->name != "aten.clone.default")
    return;
  const uint32_t t = kern.inputs[0].value;
  const int32_t tp = g.value(graph::ValueId{t}).producer;
  if (tp < 0 || !single_use(u, t) || u.extern_step[tp] < 0) return;
  const graph::Node& transpose = g.nodes()[tp];
  if (transpose.op->name != "aten.transpose.int") return;
  const auto* a = std::get_if<graph::ValueId>(&transpose.args[0]);
  const auto* d0 = std::get_if<int64_t>(&transpose.args[1]);
  const auto* d1 = std::get_if<int64_t>(&transpose.args[2]);
  if (!a || !d0 || !d1 || !single_use(u, a->index)) return;
  const int32_t ap = g.value(*a).producer;
  if (ap < 0 || u.extern_step[ap] < 0) return;
  const graph::Node& attention = g.nodes()[ap];
  if (attention.op->name != "aotgrad.masked_attention_backward.default") return;
  const ops::TensorMeta& m = g.value(*a).meta;
  const auto rank = static_cast<int64_t>(m.sizes.size());
  const int64_t i0 = *d0 < 0 ? *d0 + rank : *d0, i1 = *d1 < 0 ? *d1 + rank : *d1;
  if (!contiguous_meta(m) || rank < 2 || i0 < 0 || i1 < 0 || i0 >= rank || i1 >= rank) return;
  IntList st = strides;
  std::swap(st[static_cast<size_t>(i0)], st[static_cast<size_t>(i1)]);
  if (st.back() != 1 || (m.sizes[rank - 2] > 1 && st[rank - 2] < m.sizes.back())) return;
  for (size_t r = 0; r < attention.outputs.size(); ++r)
    if (attention.outputs[r] == *a) part.attention_result = static_cast<int32_t>(r);
  part.attention = ap;
  part.strides = std::move(st);
  chain.push_back(static_cast<uint32_t>(tp));
}

// Walks from the cat's input `v` back through single-use reshaping views to a pointwise kernel
// output; fills `part` when it reaches one whose slice layout the kernel can write.
void find_kernel_part(const graph::Graph& g, const Schedule& s, const Uses& u,
                      const ops::TensorMeta& cat, size_t dim, CatPart& part) {
  std::vector<uint32_t> chain;
  uint32_t v = part.value;
  for (;;) {
    if (u.users[v].size() != 1 || u.is_output[v]) return;
    const int32_t p = g.value(graph::ValueId{v}).producer;
    if (p < 0) return;
    const graph::Node& n = g.nodes()[p];
    const std::string_view op = n.op->name;
    if (op != "aten.view.default" && op != "aten._unsafe_view.default") break;
    if (u.extern_step[p] < 0) return;
    chain.push_back(static_cast<uint32_t>(p));
    v = std::get<graph::ValueId>(n.args[0]).index;
  }
  for (size_t k = 0; k < s.kernels.size(); ++k) {
    const Kernel& kern = s.kernels[k];
    auto out = std::find(kern.outputs.begin(), kern.outputs.end(), v);
    if (out == kern.outputs.end()) continue;
    const ops::TensorMeta& m = g.value(graph::ValueId{v}).meta;
    if (kern.reduction != Reduction::none || m.dtype != cat.dtype || !contiguous_meta(m) ||
        m.sizes != kern.shape)
      return;
    const IntList& sizes = g.value(graph::ValueId{part.value}).meta.sizes;
    IntList strides = slice_strides(kern.shape, sizes, cat.sizes, dim);
    if (strides.empty()) return;
    part.offset = part.start * product(sizes, dim + 1, sizes.size());
    find_attention_part(g, u, kern, strides, chain, part);
    std::reverse(chain.begin(), chain.end());
    if (part.attention >= 0) {
      part.kernel_output = v;  // the clone's result, never computed
      part.chain = std::move(chain);
      return;
    }
    part.kernel = static_cast<int32_t>(k);
    part.kernel_output = v;
    part.chain = std::move(chain);
    return;
  }
}

// The cat of node `i` as a fusion, or nullopt when it is not one (no part a kernel can write).
std::optional<CatFusion> cat_fusion_of(const graph::Graph& g, const Schedule& s, const Uses& u,
                                       uint32_t i) {
  const graph::Node& n = g.nodes()[i];
  const auto* list = std::get_if<graph::ValueList>(&n.args[0]);
  const auto* dim = std::get_if<int64_t>(&n.args[1]);
  if (!list || !dim || n.outputs.size() != 1) return std::nullopt;
  const ops::TensorMeta& out = g.value(n.outputs[0]).meta;
  const int64_t rank = static_cast<int64_t>(out.sizes.size());
  const int64_t d = *dim < 0 ? *dim + rank : *dim;
  if ((out.dtype != DType::f32 && out.dtype != DType::f64) || !contiguous_meta(out) || d < 0 ||
      d >= rank || product(out.sizes, 0, out.sizes.size()) == 0)
    return std::nullopt;
  CatFusion c{i, n.outputs[0].index, d, {}};
  int64_t start = 0;
  for (graph::ValueId v : graph::arg_values(*list)) {
    const ops::TensorMeta& m = g.value(v).meta;
    if (m.dtype != out.dtype || m.sizes.size() != out.sizes.size() || m.sizes[d] == 0)
      return std::nullopt;
    CatPart part;
    part.value = v.index;
    part.start = start;
    part.size = m.sizes[d];
    start += m.sizes[d];
    find_kernel_part(g, s, u, out, static_cast<size_t>(d), part);
    c.parts.push_back(std::move(part));
  }
  bool any =
      std::any_of(c.parts.begin(), c.parts.end(), [](const CatPart& p) { return p.in_place(); });
  if (!any || start != out.sizes[d]) return std::nullopt;
  return c;
}

// Marks the fused parts' kernel outputs (Kernel::out_cat) for cat `ci`.
void target_kernels(const graph::Graph& g, Schedule& s, int32_t ci) {
  const CatFusion& c = s.cats[ci];
  const IntList& cat_sizes = g.value(graph::ValueId{c.output}).meta.sizes;
  for (const CatPart& p : c.parts) {
    if (p.kernel < 0) continue;
    Kernel& k = s.kernels[p.kernel];
    if (k.out_cat.size() != k.outputs.size()) k.out_cat.resize(k.outputs.size());
    size_t j = std::find(k.outputs.begin(), k.outputs.end(), p.kernel_output) - k.outputs.begin();
    const IntList& sizes = g.value(graph::ValueId{p.value}).meta.sizes;
    k.out_cat[j].cat = ci;
    k.out_cat[j].offset = p.offset;
    k.out_cat[j].strides = slice_strides(k.shape, sizes, cat_sizes, static_cast<size_t>(c.dim));
  }
}

// Removes the kernels marked in `gone` (their steps already dropped), renumbering the steps' and
// the cat parts' kernel indices.
void remove_kernels(Schedule& s, const std::vector<bool>& gone) {
  std::vector<int32_t> index(s.kernels.size(), -1);
  std::vector<Kernel> kept;
  for (size_t k = 0; k < s.kernels.size(); ++k)
    if (!gone[k]) {
      index[k] = static_cast<int32_t>(kept.size());
      kept.push_back(std::move(s.kernels[k]));
    }
  s.kernels = std::move(kept);
  for (Step& st : s.steps)
    if (st.is_kernel) st.index = static_cast<uint32_t>(index[st.index]);
  for (CatFusion& c : s.cats)
    for (CatPart& p : c.parts)
      if (p.kernel >= 0) p.kernel = index[static_cast<size_t>(p.kernel)];
}

}  // namespace

void fuse_cats(const graph::Graph& g, const ValueUses& uses, Schedule& s) {
  const auto& nodes = g.nodes();
  Uses u{uses, std::vector<int>(nodes.size(), -1)};
  std::vector<int> kernel_step(s.kernels.size(), -1);
  for (size_t st = 0; st < s.steps.size(); ++st)
    if (!s.steps[st].is_kernel && !s.steps[st].is_gemm)
      u.extern_step[s.steps[st].index] = static_cast<int>(st);
    else if (s.steps[st].is_kernel)
      kernel_step[s.steps[st].index] = static_cast<int>(st);
  std::vector<bool> drop(s.steps.size(), false), gone(s.kernels.size(), false);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].op->name != "aten.cat.default" || u.extern_step[i] < 0) continue;
    std::optional<CatFusion> c = cat_fusion_of(g, s, u, i);
    if (!c) continue;
    const auto ci = static_cast<int32_t>(s.cats.size());
    Step& step = s.steps[u.extern_step[i]];
    step.is_cat = true;
    step.index = static_cast<uint32_t>(ci);
    for (const CatPart& p : c->parts) {
      for (uint32_t n : p.chain) drop[u.extern_step[n]] = true;
      if (p.attention < 0) continue;
      // The clone's kernel: the only one producing kernel_output.
      for (size_t k = 0; k < s.kernels.size(); ++k)
        if (s.kernels[k].outputs.size() == 1 && s.kernels[k].outputs[0] == p.kernel_output) {
          gone[k] = true;
          drop[kernel_step[k]] = true;
        }
    }
    s.cats.push_back(std::move(*c));
    target_kernels(g, s, ci);
  }
  std::vector<Step> kept;
  for (size_t st = 0; st < s.steps.size(); ++st)
    if (!drop[st]) kept.push_back(s.steps[st]);
  s.steps = std::move(kept);
  remove_kernels(s, gone);
}

}  // namespace aotgrad::backends::cpp
