#include "partition/default_partition.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "partition/cost_model.h"
#include "partition/extract.h"
#include "tensor/checked_math.h"

namespace aotgrad::partition {

size_t Partition::saved_bytes() const {
  size_t total = 0;
  for (const SavedValue& s : saved) total = saturating_add(total, s.bytes);
  return total;
}

std::string Partition::report() const {
  std::ostringstream os;
  size_t activations = 0, inputs = 0;
  for (const SavedValue& s : saved) {
    os << "  %" << s.name << ": " << dtype_name(s.meta.dtype) << shape_to_string(s.meta.sizes)
       << "  " << bytes_to_string(s.bytes) << "  from " << s.producer << "  (" << s.reason << ")\n";
    size_t& group = s.primal_index >= 0 ? inputs : activations;
    group = saturating_add(group, s.bytes);
  }
  os << "saved " << saved.size() << " values, " << bytes_to_string(saved_bytes()) << " ("
     << bytes_to_string(activations) << " activations, " << bytes_to_string(inputs)
     << " graph inputs)\n";
  return os.str();
}

Partition default_partition(const graph::Graph& joint, const JointInfo& info) {
  const auto& in = joint.inputs();
  const auto& out = joint.outputs();
  std::vector<graph::ValueId> primals(in.begin(), in.begin() + info.num_primals);
  std::vector<graph::ValueId> tangents(in.begin() + info.num_primals, in.end());
  std::vector<graph::ValueId> fw_outs(out.begin(), out.begin() + info.num_fw_outputs);
  std::vector<graph::ValueId> grads(out.begin() + info.num_fw_outputs, out.end());

  std::vector<bool> fw_node = needed_nodes(joint, fw_outs);
  std::vector<bool> bw_needed = needed_nodes(joint, grads);
  // A value is forward-available when it is a primal or made by a forward node.
  auto in_forward = [&](graph::ValueId v) {
    int32_t p = joint.value(v).producer;
    if (p < 0) return v.index < joint.values().size() &&
                      std::find(primals.begin(), primals.end(), v) != primals.end();
    return static_cast<bool>(fw_node[p]);
  };
  // Saved: forward-available values read by backward nodes or returned as gradients.
  std::vector<bool> is_saved(joint.values().size(), false);
  for (size_t i = 0; i < joint.nodes().size(); ++i) {
    if (!bw_needed[i] || fw_node[i]) continue;
    for (const graph::NodeArg& a : joint.nodes()[i].args)
      for (graph::ValueId u : graph::arg_values(a))
        if (in_forward(u)) is_saved[u.index] = true;
  }
  for (graph::ValueId g : grads)
    if (in_forward(g)) is_saved[g.index] = true;

  Partition p;
  std::vector<graph::ValueId> saved_ids;
  for (uint32_t v = 0; v < joint.values().size(); ++v) {
    if (!is_saved[v]) continue;
    graph::ValueId id{v};
    const graph::Value& val = joint.value(id);
    SavedValue s;
    s.name = val.name;
    s.meta = val.meta;
    s.bytes = value_bytes(val.meta);
    if (val.producer < 0) {
      s.primal_index = static_cast<int>(std::find(primals.begin(), primals.end(), id) - primals.begin());
      s.producer = "input";
      s.reason = "graph input read by the backward";
    } else {
      s.producer = std::string(joint.nodes()[val.producer].op->name);
      s.reason = "forward value read by the backward";
    }
    p.saved.push_back(s);
    saved_ids.push_back(id);
  }

  std::vector<std::string> fw_in_desc(joint.input_descs().begin(),
                                      joint.input_descs().begin() + info.num_primals);
  std::vector<graph::ValueId> fw_graph_outs = fw_outs;
  std::vector<std::string> fw_out_desc(joint.output_descs().begin(),
                                       joint.output_descs().begin() + info.num_fw_outputs);
  for (size_t i = 0; i < saved_ids.size(); ++i) {
    fw_graph_outs.push_back(saved_ids[i]);
    fw_out_desc.push_back("saved(" + std::to_string(i) + ")");
  }
  p.forward = extract_subgraph(joint, "forward", primals, fw_in_desc, fw_graph_outs, fw_out_desc);

  std::vector<graph::ValueId> bw_inputs = saved_ids;
  std::vector<std::string> bw_in_desc;
  for (size_t i = 0; i < saved_ids.size(); ++i) bw_in_desc.push_back("saved(" + std::to_string(i) + ")");
  for (size_t i = 0; i < tangents.size(); ++i) {
    bw_inputs.push_back(tangents[i]);
    bw_in_desc.push_back(joint.input_descs()[info.num_primals + i]);
  }
  std::vector<std::string> bw_out_desc(joint.output_descs().begin() + info.num_fw_outputs,
                                       joint.output_descs().end());
  p.backward = extract_subgraph(joint, "backward", bw_inputs, bw_in_desc, grads, bw_out_desc);
  return p;
}

}  // namespace aotgrad::partition
