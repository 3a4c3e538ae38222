#include "partition/extract.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include "partition/cost_model.h"

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
                              const std::vector<Descriptor>& input_descs,
                              const std::vector<graph::ValueId>& outputs,
                              const std::vector<Descriptor>& output_descs) {
  graph::Graph out(name);
  std::unordered_map<uint32_t, graph::ValueId> map;  // joint value -> new value
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value& v = joint.value(inputs[i]);
    map[inputs[i].index] =
        out.add_input(v.name, v.meta, i < input_descs.size() ? input_descs[i] : Descriptor{});
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
    graph::for_each_value(args, [&](graph::ValueId& v) { v = map.at(v.index); });
    std::vector<ops::TensorMeta> metas;
    std::vector<std::string> names;
    for (graph::ValueId o : n.outputs) {
      metas.push_back(joint.value(o).meta);
      names.push_back(joint.value(o).name);
    }
    std::vector<graph::ValueId> outs = out.add_node(*n.op, std::move(args), metas, names);
    out.mutable_nodes().back().origin = n.origin;
    for (size_t k = 0; k < outs.size(); ++k) map[n.outputs[k].index] = outs[k];
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    out.add_output(map.at(outputs[i].index),
                   i < output_descs.size() ? output_descs[i] : Descriptor{});
  return out;
}

namespace {

// The primal `v` is a view of through a chain of view ops (t, permute, expand, ...), or -1.
int viewed_primal(const graph::Graph& joint, const std::vector<graph::ValueId>& primals,
                  graph::ValueId v) {
  while (joint.value(v).producer >= 0) {
    const graph::Node& n = joint.nodes()[joint.value(v).producer];
    if (!n.op->is_view()) return -1;
    const auto* base = std::get_if<graph::ValueId>(&n.args.at(n.op->view_of_arg()));
    if (!base) return -1;
    v = *base;
  }
  auto it = std::find(primals.begin(), primals.end(), v);
  return it == primals.end() ? -1 : static_cast<int>(it - primals.begin());
}

}  // namespace

Partition assemble_partition(const graph::Graph& joint, const JointInfo& info,
                             const std::vector<graph::ValueId>& saved,
                             const std::vector<std::string>& reasons) {
  const auto& in = joint.inputs();
  const auto& out = joint.outputs();
  const auto& in_desc = joint.input_descs();
  const auto& out_desc = joint.output_descs();
  const auto np = static_cast<std::ptrdiff_t>(info.num_primals);
  const auto nf = static_cast<std::ptrdiff_t>(info.num_fw_outputs);
  std::vector<graph::ValueId> primals(in.begin(), in.begin() + np);

  Partition p;
  for (size_t i = 0; i < saved.size(); ++i) {
    const graph::Value& val = joint.value(saved[i]);
    SavedValue s;
    s.name = val.name;
    s.meta = val.meta;
    s.bytes = value_bytes(val.meta);
    s.reason = i < reasons.size() ? reasons[i] : "";
    if (val.producer < 0) {
      s.primal_index =
          static_cast<int>(std::find(primals.begin(), primals.end(), saved[i]) - primals.begin());
      s.producer = "input";
    } else {
      s.producer = std::string(joint.nodes()[val.producer].op->name);
      s.view_of_primal = viewed_primal(joint, primals, saved[i]);
    }
    p.saved.push_back(std::move(s));
  }

  std::vector<graph::ValueId> fw_outs(out.begin(), out.begin() + nf);
  std::vector<Descriptor> fw_out_desc(out_desc.begin(), out_desc.begin() + nf);
  std::vector<graph::ValueId> bw_in;
  std::vector<Descriptor> bw_in_desc;
  for (size_t i = 0; i < saved.size(); ++i) {
    fw_outs.push_back(saved[i]);
    fw_out_desc.push_back(Descriptor::saved(static_cast<int64_t>(i)));
    bw_in.push_back(saved[i]);
    bw_in_desc.push_back(Descriptor::saved(static_cast<int64_t>(i)));
  }
  p.forward = extract_subgraph(joint, "forward", primals,
                               std::vector<Descriptor>(in_desc.begin(), in_desc.begin() + np),
                               fw_outs, fw_out_desc);
  bw_in.insert(bw_in.end(), in.begin() + np, in.end());
  bw_in_desc.insert(bw_in_desc.end(), in_desc.begin() + np, in_desc.end());
  std::vector<graph::ValueId> grads(out.begin() + nf, out.end());
  p.backward = extract_subgraph(joint, "backward", bw_in, bw_in_desc, grads,
                                std::vector<Descriptor>(out_desc.begin() + nf, out_desc.end()));
  return p;
}

}  // namespace aotgrad::partition
