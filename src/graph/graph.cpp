#include "graph/graph.h"

#include <stdexcept>

namespace aotgrad::graph {

std::string Graph::fresh_name(std::string_view hint) {
  std::string base(hint.empty() ? "v" : hint);
  uint32_t& count = name_counts_[base];
  std::string name = count == 0 ? base : base + "_" + std::to_string(count);
  ++count;
  // A parsed graph may already use "mm_1" literally; skip such names.
  while (name_counts_.count(name) && name != base) {
    name = base + "_" + std::to_string(count++);
  }
  if (name != base) name_counts_[name] = 1;
  return name;
}

ValueId Graph::add_input(std::string_view name_hint, const ops::TensorMeta& meta, Descriptor desc) {
  ValueId id{static_cast<uint32_t>(values_.size())};
  values_.push_back(Value{fresh_name(name_hint), meta, -1, static_cast<uint32_t>(inputs_.size())});
  inputs_.push_back(id);
  input_descs_.push_back(std::move(desc));
  return id;
}

std::vector<ValueId> Graph::add_node(const ops::OpDef& op, std::vector<NodeArg> args,
                                     const std::vector<ops::TensorMeta>& output_metas,
                                     const std::vector<std::string>& name_hints) {
  Node node;
  node.op = &op;
  node.args = std::move(args);
  int32_t index = static_cast<int32_t>(nodes_.size());
  std::string fallback = default_value_name(op);
  for (size_t i = 0; i < output_metas.size(); ++i) {
    ValueId id{static_cast<uint32_t>(values_.size())};
    const std::string& hint = i < name_hints.size() ? name_hints[i] : fallback;
    values_.push_back(Value{fresh_name(hint), output_metas[i], index, static_cast<uint32_t>(i)});
    node.outputs.push_back(id);
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().outputs;
}

void Graph::add_output(ValueId v, Descriptor desc) {
  if (v.index >= values_.size()) throw std::out_of_range("add_output: no such value");
  outputs_.push_back(v);
  output_descs_.push_back(std::move(desc));
}

void Graph::replace_nodes(std::vector<Node> nodes) {
  nodes_ = std::move(nodes);
  for (size_t i = 0; i < nodes_.size(); ++i)
    for (size_t k = 0; k < nodes_[i].outputs.size(); ++k) {
      Value& v = values_.at(nodes_[i].outputs[k].index);
      v.producer = static_cast<int32_t>(i);
      v.output_index = static_cast<uint32_t>(k);
    }
}

std::vector<ValueId> arg_values(const NodeArg& a, bool keep_none) {
  if (auto* v = std::get_if<ValueId>(&a)) return {*v};
  if (auto* l = std::get_if<ValueList>(&a)) {
    if (keep_none) return *l;
    std::vector<ValueId> out;
    out.reserve(l->size());
    for (ValueId v : *l)
      if (v != kNoValue) out.push_back(v);
    return out;
  }
  return {};
}

std::string default_value_name(const ops::OpDef& op) {
  std::string_view n = op.name;
  if (n.rfind("aten.", 0) == 0) n.remove_prefix(5);
  auto dot = n.find('.');
  return std::string(n.substr(0, dot));
}

}  // namespace aotgrad::graph
