#include "partition/extract.h"

#include <stdexcept>
#include <unordered_map>

namespace aotgrad::partition {

std::vector<bool> needed_nodes(const graph::Graph& g, const std::vector<graph::ValueId>& outputs) {
  std::vector<bool> needed(g.nodes().size(), false);
  std::vector<graph::ValueId> work(outputs.begin(), outputs.end());
  while (!work.empty()) {
    graph::ValueId v = work.back();
    work.pop_back();
    int32_t p = g.value(v).producer;
    if (p < 0 || needed[p]) continue;
    needed[p] = true;
    for (const graph::NodeArg& a : g.nodes()[p].args)
      for (graph::ValueId u : graph::arg_values(a)) work.push_back(u);
  }
  return needed;
}

graph::Graph extract_subgraph(const graph::Graph& joint, const std::string& name,
                              const std::vector<graph::ValueId>& inputs,
                              const std::vector<std::string>& input_descs,
                              const std::vector<graph::ValueId>& outputs,
                              const std::vector<std::string>& output_descs) {
  graph::Graph out(name);
  std::unordered_map<uint32_t, graph::ValueId> map;  // joint value -> new value
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value& v = joint.value(inputs[i]);
    map[inputs[i].index] = out.add_input(v.name, v.meta, i < input_descs.size() ? input_descs[i] : "");
  }
  // Nodes needed, stopping at the given inputs.
  std::vector<bool> needed(joint.nodes().size(), false);
  std::vector<graph::ValueId> work(outputs.begin(), outputs.end());
  while (!work.empty()) {
    graph::ValueId v = work.back();
    work.pop_back();
    if (map.count(v.index)) continue;
    int32_t p = joint.value(v).producer;
    if (p < 0)
      throw std::logic_error("graph " + name + ": value %" + joint.value(v).name +
                             " is needed but is neither an input nor computable");
    if (needed[p]) continue;
    needed[p] = true;
    for (const graph::NodeArg& a : joint.nodes()[p].args)
      for (graph::ValueId u : graph::arg_values(a)) work.push_back(u);
  }
  for (size_t i = 0; i < joint.nodes().size(); ++i) {
    if (!needed[i]) continue;
    const graph::Node& n = joint.nodes()[i];
    std::vector<graph::NodeArg> args = n.args;
    for (graph::NodeArg& a : args) {
      if (auto* v = std::get_if<graph::ValueId>(&a)) *v = map.at(v->index);
      if (auto* l = std::get_if<graph::ValueList>(&a))
        for (graph::ValueId& e : *l) e = map.at(e.index);
    }
    std::vector<ops::TensorMeta> metas;
    std::vector<std::string> names;
    for (graph::ValueId o : n.outputs) {
      metas.push_back(joint.value(o).meta);
      names.push_back(joint.value(o).name);
    }
    std::vector<graph::ValueId> outs = out.add_node(*n.op, std::move(args), metas, names);
    for (size_t k = 0; k < outs.size(); ++k) map[n.outputs[k].index] = outs[k];
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    out.add_output(map.at(outputs[i].index), i < output_descs.size() ? output_descs[i] : "");
  return out;
}

}  // namespace aotgrad::partition
