#include "partition/shape_only_uses.h"

namespace aotgrad::partition {
namespace {

// aten.empty.memory_format's arguments for a contiguous tensor like `m`, defaults filled in.
std::vector<graph::NodeArg> empty_args(const ops::OpDef& empty, const ops::TensorMeta& m) {
  ops::OpArgs args{m.sizes};
  ops::normalize(empty, args);
  args[empty.parsed_schema().find_arg("dtype")] = m.dtype;
  std::vector<graph::NodeArg> out;
  for (const ops::Arg& a : args)
    out.push_back(std::visit(
        [](const auto& x) -> graph::NodeArg {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, ops::TensorList>) {
            return std::monostate{};  // empty takes no tensors
          } else {
            return x;
          }
        },
        a));
  return out;
}

bool plain_contiguous(const ops::TensorMeta& m) {
  return m.storage_offset == 0 && m.strides == contiguous_strides(m.sizes);
}

}  // namespace

size_t drop_shape_only_uses(graph::Graph& g) {
  const ops::OpDef& empty = ops::lookup("aten.empty.memory_format");
  const size_t original_count = g.nodes().size();
  std::vector<std::vector<size_t>> stand_ins(original_count);  // new node indices, per node
  size_t replaced = 0;
  for (size_t i = 0; i < original_count; ++i) {
    if (g.nodes()[i].op->recompute != ops::Recompute::factory) continue;
    for (size_t j = 0; j < g.nodes()[i].args.size(); ++j) {
      const auto* v = std::get_if<graph::ValueId>(&g.nodes()[i].args[j]);
      if (!v || g.value(*v).producer < 0) continue;
      ops::TensorMeta m = g.value(*v).meta;
      if (!plain_contiguous(m)) continue;
      // add_node appends (and may reallocate the node list): re-read node i afterwards.
      graph::ValueId fresh = g.add_node(empty, empty_args(empty, m), {m}, {"empty"}).at(0);
      g.mutable_nodes()[i].args[j] = fresh;
      stand_ins[i].push_back(g.nodes().size() - 1);
      ++replaced;
    }
  }
  if (replaced == 0) return 0;
  std::vector<graph::Node> order;
  order.reserve(g.nodes().size());
  for (size_t i = 0; i < original_count; ++i) {
    for (size_t s : stand_ins[i]) order.push_back(g.nodes()[s]);
    order.push_back(g.nodes()[i]);
  }
  g.replace_nodes(std::move(order));
  return replaced;
}

}  // namespace aotgrad::partition
