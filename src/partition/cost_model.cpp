#include "partition/cost_model.h"

#include <algorithm>
#include <limits>
#include <string_view>

#include "tensor/checked_math.h"

namespace aotgrad::partition {
namespace {

double numel(const ops::TensorMeta& m) {
  return static_cast<double>(numel_of(m.sizes));
}

// The tensor arguments of `n`, in order.
std::vector<const ops::TensorMeta*> tensor_args(const graph::Graph& g, const graph::Node& n) {
  std::vector<const ops::TensorMeta*> out;
  for (const graph::NodeArg& a : n.args)
    for (graph::ValueId v : graph::arg_values(a)) out.push_back(&g.value(v).meta);
  return out;
}

// Exact FLOP counts for the matrix products and convolution (the compute-heavy ops the budget
// trades most);
// -1 for the others. The op table has no FLOP column yet, so these few formulas
// live here, keyed by the op's name.
double known_flops(std::string_view name, const std::vector<const ops::TensorMeta*>& in,
                   const ops::TensorMeta& out) {
  if (name == "aten.mm.default" && in.size() == 2 && in[0]->sizes.size() == 2)
    return 2.0 * numel(out) * static_cast<double>(in[0]->sizes[1]);
  if (name == "aten.bmm.default" && in.size() == 2 && in[0]->sizes.size() == 3)
    return 2.0 * numel(out) * static_cast<double>(in[0]->sizes[2]);
  if (name == "aten.addmm.default" && in.size() == 3 && in[1]->sizes.size() == 2)
    return 2.0 * numel(out) * static_cast<double>(in[1]->sizes[1]) + numel(out);
  // Each output element: a dot product over (input channels / groups) x kernel elements, which is
  // the weight's numel over its output channels.
  if (name == "aten.convolution.default" && in.size() >= 2 && !in[1]->sizes.empty() &&
      in[1]->sizes[0] > 0)
    return 2.0 * numel(out) * numel(*in[1]) / static_cast<double>(in[1]->sizes[0]);
  return -1.0;
}

}  // namespace

size_t value_bytes(const ops::TensorMeta& m) {
  return saturating_mul(static_cast<size_t>(numel_of(m.sizes)), itemsize(m.dtype));
}

std::string bytes_to_string(size_t bytes) {
  if (bytes == std::numeric_limits<size_t>::max())
    return "more than " + std::to_string(bytes - 1) + " B (saturated)";
  return std::to_string(bytes) + " B";
}

double estimate_flops(const graph::Graph& g, const graph::Node& n) {
  std::vector<const ops::TensorMeta*> in = tensor_args(g, n);
  double out_numel = 0;
  for (graph::ValueId v : n.outputs) out_numel += numel(g.value(v).meta);
  double in_numel = 0;
  for (const ops::TensorMeta* m : in) in_numel += numel(*m);
  switch (n.op->recompute) {
    case ops::Recompute::view:
      return 0.0;
    case ops::Recompute::reduction:
      return std::max(in_numel, out_numel);
    case ops::Recompute::compute_heavy: {
      if (!n.outputs.empty()) {
        double f = known_flops(n.op->name, in, g.value(n.outputs[0]).meta);
        if (f >= 0) return f;
      }
      double inner = 1;
      for (const ops::TensorMeta* m : in)
        if (!m->sizes.empty()) inner = std::max(inner, static_cast<double>(m->sizes.back()));
      return std::max(2.0 * out_numel * inner, out_numel);
    }
    default:
      return out_numel;
  }
}

double estimate_seconds(const graph::Graph& g, const graph::Node& n) {
  constexpr double kFlopsPerSecond = 50e9, kBytesPerSecond = 10e9;
  if (n.op->recompute == ops::Recompute::view) return 0.0;
  double bytes = 0;
  for (const graph::NodeArg& a : n.args)
    for (graph::ValueId v : graph::arg_values(a)) bytes += value_bytes(g.value(v).meta);
  for (graph::ValueId v : n.outputs) bytes += value_bytes(g.value(v).meta);
  return std::max(estimate_flops(g, n) / kFlopsPerSecond, bytes / kBytesPerSecond);
}

}  // namespace aotgrad::partition
