#include "partition/default_partition.h"

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include "partition/cost_model.h"
#include "partition/extract.h"
#include "tensor/checked_math.h"

namespace aotgrad::partition {

size_t saved_bytes(const std::vector<SavedValue>& saved) {
  size_t total = 0;
  for (const SavedValue& s : saved) total = saturating_add(total, s.bytes);
  return total;
}

size_t saved_activation_bytes(const std::vector<SavedValue>& saved) {
  size_t total = 0;
  for (const SavedValue& s : saved)
    if (s.primal_index < 0 && s.view_of_primal < 0) total += s.bytes;
  return total;
}

size_t Partition::saved_bytes() const {
  return partition::saved_bytes(saved);
}

std::string Partition::report() const {
  return saved_report(saved);
}

std::string saved_report(const std::vector<SavedValue>& saved) {
  std::ostringstream os;
  size_t activations = 0, inputs = 0;
  for (const SavedValue& s : saved) {
    os << "  %" << s.name << ": " << dtype_name(s.meta.dtype) << shape_to_string(s.meta.sizes)
       << "  " << bytes_to_string(s.bytes) << "  from " << s.producer << "  (" << s.reason
       << (s.view_of_primal >= 0 ? "; a view of graph input " + std::to_string(s.view_of_primal)
                                 : std::string())
       << ")\n";
    size_t& group = s.primal_index >= 0 || s.view_of_primal >= 0 ? inputs : activations;
    group = saturating_add(group, s.bytes);
  }
  os << "saved " << saved.size() << " values, " << bytes_to_string(saved_bytes(saved)) << " ("
     << bytes_to_string(activations) << " activations, " << bytes_to_string(inputs)
     << " graph inputs)\n";
  return os.str();
}

Partition default_partition(const graph::Graph& joint, const JointInfo& info) {
  const auto& in = joint.inputs();
  const auto& out = joint.outputs();
  std::vector<graph::ValueId> primals(in.begin(), in.begin() + info.num_primals);
  std::vector<graph::ValueId> fw_outs(out.begin(), out.begin() + info.num_fw_outputs);
  std::vector<graph::ValueId> grads(out.begin() + info.num_fw_outputs, out.end());

  std::vector<bool> fw_node = needed_nodes(joint, fw_outs);
  std::vector<bool> bw_needed = needed_nodes(joint, grads);
  // A value is forward-available when it is a primal or made by a forward node.
  auto in_forward = [&](graph::ValueId v) {
    int32_t p = joint.value(v).producer;
    if (p < 0)
      return v.index < joint.values().size() &&
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

  std::vector<graph::ValueId> saved_ids;
  std::vector<std::string> reasons;
  for (uint32_t v = 0; v < joint.values().size(); ++v) {
    if (!is_saved[v]) continue;
    saved_ids.push_back(graph::ValueId{v});
    reasons.push_back(joint.value(saved_ids.back()).producer < 0
                          ? "graph input read by the backward"
                          : "forward value read by the backward");
  }
  return assemble_partition(joint, info, saved_ids, reasons);
}

}  // namespace aotgrad::partition
