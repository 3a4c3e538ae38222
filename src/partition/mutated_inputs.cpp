#include "partition/mutated_inputs.h"

#include <stdexcept>
#include <string>

#include "ops/op.h"

namespace aotgrad::partition {

void clone_mutated_primals_for_backward(graph::Graph& joint, const JointInfo& info) {
  if (info.mutated_primals.empty()) return;
  const auto& inputs = joint.inputs();
  if (info.num_primals > inputs.size())
    throw std::invalid_argument("JointInfo::num_primals is " + std::to_string(info.num_primals) +
                                " but the joint graph has " + std::to_string(inputs.size()) +
                                " inputs");
  std::vector<bool> tangent_dependent(joint.values().size(), false);
  for (size_t i = info.num_primals; i < inputs.size(); ++i) tangent_dependent[inputs[i].index] = true;
  std::vector<bool> backward_node(joint.nodes().size(), false);
  for (size_t i = 0; i < joint.nodes().size(); ++i) {
    const graph::Node& n = joint.nodes()[i];
    for (const graph::NodeArg& arg : n.args)
      for (graph::ValueId v : graph::arg_values(arg))
        backward_node[i] = backward_node[i] || tangent_dependent[v.index];
    if (backward_node[i])
      for (graph::ValueId v : n.outputs) tangent_dependent[v.index] = true;
  }

  static const ops::OpDef& clone = ops::lookup("aten.clone.default");
  std::vector<graph::Node> clones;
  for (size_t p : info.mutated_primals) {
    if (p >= info.num_primals)
      throw std::invalid_argument("JointInfo::mutated_primals names primal " + std::to_string(p) +
                                  " but the joint graph has " + std::to_string(info.num_primals));
    graph::ValueId primal = inputs[p];
    bool read_by_backward = false;
    for (size_t i = 0; i < backward_node.size() && !read_by_backward; ++i)
      if (backward_node[i])
        for (const graph::NodeArg& arg : joint.nodes()[i].args)
          for (graph::ValueId v : graph::arg_values(arg)) read_by_backward |= v == primal;
    if (!read_by_backward) continue;
    const ops::TensorMeta& meta = joint.value(primal).meta;
    graph::ValueId copy =
        joint
            .add_node(clone, {primal}, {ops::TensorMeta::contiguous(meta.sizes, meta.dtype)},
                      {joint.value(primal).name + "_clone"})
            .at(0);
    // Forward uses move too, so the clone is forward work under every partitioner (the default
    // one runs in the backward whatever the forward outputs do not need).
    for (size_t i = 0; i < backward_node.size(); ++i) {
      for (graph::NodeArg& arg : joint.mutable_nodes()[i].args) {
        if (auto* v = std::get_if<graph::ValueId>(&arg); v && *v == primal) *v = copy;
        if (auto* l = std::get_if<graph::ValueList>(&arg))
          for (graph::ValueId& e : *l)
            if (e == primal) e = copy;
      }
    }
    clones.push_back(joint.nodes().back());
    backward_node.push_back(false);
  }
  if (clones.empty()) return;
  // The clones were appended; they read only primals, so they go first.
  std::vector<graph::Node> order = clones;
  for (size_t i = 0; i + clones.size() < joint.nodes().size(); ++i) order.push_back(joint.nodes()[i]);
  joint.replace_nodes(std::move(order));
}

}  // namespace aotgrad::partition
