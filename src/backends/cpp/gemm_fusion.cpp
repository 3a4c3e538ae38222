#include "backends/cpp/gemm_fusion.h"

#include <array>
#include <optional>
#include <string>
#include <variant>

namespace aotgrad::backends::cpp {
namespace {

using kernels::GemmActivation;

const ops::TensorMeta& meta(const graph::Graph& g, uint32_t v) {
  return g.value(graph::ValueId{v}).meta;
}

bool is_f32(const graph::Graph& g, const graph::NodeArg& a) {
  const auto* v = std::get_if<graph::ValueId>(&a);
  return v && g.value(*v).meta.dtype == DType::f32;
}

bool is_one(const graph::NodeArg& a) {
  const auto* s = std::get_if<Scalar>(&a);
  return s && s->to_double() == 1.0;
}

bool dense(const ops::TensorMeta& m) {
  return m.storage_offset == 0 && (m.strides.empty() || m.strides == contiguous_strides(m.sizes));
}

// A stride / padding / dilation argument of a 2-D convolution: one entry applies to both dims.
bool spatial_pair(const graph::NodeArg& a, std::array<int64_t, 2>& out) {
  const auto* v = std::get_if<IntList>(&a);
  if (!v || v->empty() || v->size() > 2) return false;
  out = {v->front(), v->back()};
  return true;
}

// A 2-D f32 convolution, not transposed: fills a (input), b (weight), bias and conv_params.
bool starts_conv_fusion(const graph::Graph& g, const graph::Node& n, GemmFusion& f) {
  if (n.args.size() != 9 || !is_f32(g, n.args[0]) || !is_f32(g, n.args[1])) return false;
  const auto* transposed = std::get_if<bool>(&n.args[6]);
  const auto* groups = std::get_if<int64_t>(&n.args[8]);
  kernels::Conv2dParams& p = f.conv_params;
  if (!transposed || *transposed || !groups || !spatial_pair(n.args[3], p.stride) ||
      !spatial_pair(n.args[4], p.padding) || !spatial_pair(n.args[5], p.dilation))
    return false;
  p.groups = *groups;
  if (is_f32(g, n.args[2]))
    f.bias = std::get<graph::ValueId>(n.args[2]).index;
  else if (!std::holds_alternative<std::monostate>(n.args[2]))
    return false;
  f.a = std::get<graph::ValueId>(n.args[0]).index;
  f.b = std::get<graph::ValueId>(n.args[1]).index;
  f.conv = true;
  return meta(g, f.a).sizes.size() == 4 && meta(g, f.b).sizes.size() == 4;
}

// The product that starts a fusion: fills bias, a and b.
bool starts_fusion(const graph::Graph& g, const graph::Node& n, GemmFusion& f) {
  const std::string_view op = n.op->name;
  if (op == "aten.convolution.default") return starts_conv_fusion(g, n, f);
  if (op == "aten.mm.default" && n.args.size() == 2 && is_f32(g, n.args[0]) &&
      is_f32(g, n.args[1])) {
    f.a = std::get<graph::ValueId>(n.args[0]).index;
    f.b = std::get<graph::ValueId>(n.args[1]).index;
  } else if (op == "aten.addmm.default" && n.args.size() == 5 && is_f32(g, n.args[0]) &&
             is_f32(g, n.args[1]) && is_f32(g, n.args[2]) && is_one(n.args[3]) &&
             is_one(n.args[4])) {
    f.bias = std::get<graph::ValueId>(n.args[0]).index;
    f.a = std::get<graph::ValueId>(n.args[1]).index;
    f.b = std::get<graph::ValueId>(n.args[2]).index;
    const IntList& bs = meta(g, static_cast<uint32_t>(f.bias)).sizes;
    const IntList& out = g.value(n.outputs[0]).meta.sizes;
    if (bs.empty() || bs.size() > 2 || bs.back() != out[1] ||
        (bs.size() == 2 && bs[0] != 1 && bs[0] != out[0]))
      return false;
  } else {
    return false;
  }
  return meta(g, f.a).sizes.size() == 2 && meta(g, f.b).sizes.size() == 2;
}

// relu only: oneDNN's gelu post-ops compute the textbook formula, which cancels in the negative
// tail (0 where eager gives -2.1e-32 at x = -12, erf or tanh), so gelu runs as the eager kernel
// after the product (its op row has no fusion_expr either, ops/pointwise.cpp).
std::optional<GemmActivation> activation_of(const graph::Node& n) {
  if (n.op->name == "aten.relu.default") return GemmActivation::relu;
  return std::nullopt;
}

bool is_view_of_dense(const graph::Graph& g, const graph::Node& n) {
  const std::string_view op = n.op->name;
  return (op == "aten.view.default" || op == "aten._unsafe_view.default" ||
          op == "aten.reshape.default") &&
         dense(g.value(n.outputs[0]).meta);
}

// Extends a fusion started at node `i` along single-use values, stopping at a node an earlier
// fusion took (a + b of two products: the first takes the add, the second's result is its
// residual); false when no post-op joined.
bool extend(const graph::Graph& g, uint32_t i, const std::vector<std::vector<uint32_t>>& users,
            const std::vector<bool>& is_output, const std::vector<bool>& claimed,
            GemmFusion& f) {
  const auto& nodes = g.nodes();
  uint32_t cur = nodes[i].outputs[0].index;
  std::vector<uint32_t> chain{i};
  size_t accepted = 0;  // chain length up to the last post-op
  while (users[cur].size() == 1 && !is_output[cur]) {
    const uint32_t u = users[cur][0];
    const graph::Node& n = nodes[u];
    if (n.outputs.size() != 1 || claimed[u]) break;
    const uint32_t out = n.outputs[0].index;
    if (!f.conv && is_view_of_dense(g, n) && std::get<graph::ValueId>(n.args[0]).index == cur) {
      chain.push_back(u);  // a convolution's result keeps its sizes: conv2d_epilogue makes it
    } else if (f.activation == GemmActivation::none && activation_of(n) &&
               meta(g, out).dtype == DType::f32) {
      f.activation = *activation_of(n);
      chain.push_back(u);
      accepted = chain.size();
    } else if (f.residual < 0 && n.op->name == "aten.add.Tensor" && n.args.size() == 3 &&
               is_one(n.args[2]) && is_f32(g, n.args[0]) && is_f32(g, n.args[1])) {
      const uint32_t x = std::get<graph::ValueId>(n.args[0]).index;
      const uint32_t y = std::get<graph::ValueId>(n.args[1]).index;
      const uint32_t other = x == cur ? y : x;
      if (other == cur || meta(g, other).sizes != meta(g, out).sizes ||
          meta(g, cur).sizes != meta(g, out).sizes)
        break;
      f.residual = other;
      chain.push_back(u);
      accepted = chain.size();
      if (f.activation != GemmActivation::none) break;
      f.residual_first = true;  // an activation may still follow: activation(product + other)
    } else {
      break;
    }
    cur = out;
  }
  if (accepted == 0) return false;
  if (f.activation == GemmActivation::none) f.residual_first = false;
  chain.resize(accepted);
  const uint32_t last = chain.back();
  for (uint32_t k = i + 1; k < last; ++k)
    if (nodes[k].op->is_inplace()) return false;
  f.nodes = chain;
  f.output = nodes[last].outputs[0].index;
  return dense(meta(g, f.output));
}

}  // namespace

std::vector<GemmFusion> find_gemm_fusions(const graph::Graph& g, const ValueUses& uses,
                                          bool convolutions) {
  const auto& nodes = g.nodes();
  const auto& [users, is_output] = uses;
  std::vector<GemmFusion> fusions;
  std::vector<bool> claimed(nodes.size(), false);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    GemmFusion f;
    if (!convolutions && nodes[i].op->name == "aten.convolution.default") continue;
    if (nodes[i].outputs.size() == 1 && starts_fusion(g, nodes[i], f) &&
        extend(g, i, users, is_output, claimed, f)) {
      for (uint32_t n : f.nodes) claimed[n] = true;
      fusions.push_back(std::move(f));
    }
  }
  return fusions;
}

}  // namespace aotgrad::backends::cpp
