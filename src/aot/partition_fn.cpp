// run_partition (aot/partition_fn.h) and the public built-in partitioners (aotgrad/compiler.h).
// Reading guide: run_partition at the bottom; check_partition states, in order, what a user's
// result must satisfy; to_partition turns a checked result into the Partition the runtime takes.
#include "aot/partition_fn.h"

#include <algorithm>
#include <stdexcept>

#include "graph/node_args.h"
#include "partition/cost_model.h"
#include "partition/memory_budget.h"
#include "partition/registry.h"
#include "tensor/message_text.h"

namespace aotgrad {
namespace {

PartitionedGraphs to_public(partition::Partition p) {
  std::vector<std::string> reasons;
  for (const partition::SavedValue& s : p.saved) reasons.push_back(s.reason);
  return {GraphView(std::make_shared<const graph::Graph>(std::move(p.forward))),
          GraphView(std::make_shared<const graph::Graph>(std::move(p.backward))),
          std::move(reasons)};
}

partition::JointInfo internal_info(const JointInfo& info) {
  return {info.num_primals, info.num_fw_outputs, info.node_budgets};
}

}  // namespace

PartitionedGraphs default_partition(const GraphView& joint, const JointInfo& info) {
  return to_public(
      partition::run_partitioner("default", joint.graph(), internal_info(info),
                                 {.activation_memory_budget = info.activation_memory_budget}));
}

PartitionedGraphs min_cut_rematerialization_partition(const GraphView& joint,
                                                      const JointInfo& info) {
  return to_public(
      partition::run_partitioner("min_cut", joint.graph(), internal_info(info),
                                 {.activation_memory_budget = info.activation_memory_budget}));
}

namespace aot {
namespace {

// Checks one side of a signature: graph `g`'s inputs (or outputs) [first, first + n) against the
// joint values `expected`, by metadata. Returns the problem, or "" when they line up.
std::string mismatch(const graph::Graph& g, const std::vector<graph::ValueId>& got, size_t first,
                     const graph::Graph& joint, const std::vector<graph::ValueId>& expected,
                     size_t expected_first, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    const ops::TensorMeta& a = g.value(got[first + i]).meta;
    const ops::TensorMeta& b = joint.value(expected[expected_first + i]).meta;
    if (a.dtype != b.dtype || a.sizes != b.sizes)
      return what + " " + std::to_string(i) + " is " + graph::type_annotation(a) +
             ", the joint graph's is " + graph::type_annotation(b);
  }
  return "";
}

// The first way `p` fails to fit the runtime's shape (aot/partition_fn.h), or "".
std::string check_partition(const PartitionedGraphs& p, const graph::Graph& joint,
                            const partition::JointInfo& info) {
  const graph::Graph& fw = p.forward.graph();
  const graph::Graph& bw = p.backward.graph();
  size_t np = info.num_primals, nf = info.num_fw_outputs;
  size_t nt = joint.inputs().size() - np, ng = joint.outputs().size() - nf;
  auto count = [](const std::string& what, size_t got, const std::string& expected) {
    bool takes = what.ends_with("takes");
    return what + " " + std::to_string(got) + (takes ? " inputs" : " outputs") + ", expected " +
           expected;
  };
  if (fw.inputs().size() != np)
    return count("the forward graph takes", fw.inputs().size(), std::to_string(np) + " primals");
  if (fw.outputs().size() < nf)
    return count("the forward graph returns", fw.outputs().size(),
                 "at least the " + std::to_string(nf) + " forward outputs");
  size_t ns = fw.outputs().size() - nf;
  if (bw.inputs().size() != ns + nt)
    return count("the backward graph takes", bw.inputs().size(),
                 std::to_string(ns) + " saved values + " + std::to_string(nt) + " tangents");
  if (bw.outputs().size() != ng)
    return count("the backward graph returns", bw.outputs().size(),
                 std::to_string(ng) + " gradients");
  std::string m = mismatch(fw, fw.inputs(), 0, joint, joint.inputs(), 0, np, "forward input");
  if (m.empty()) m = mismatch(fw, fw.outputs(), 0, joint, joint.outputs(), 0, nf, "forward output");
  if (m.empty())
    m = mismatch(bw, bw.inputs(), 0, fw, fw.outputs(), nf, ns, "saved value (backward input)");
  if (m.empty())
    m = mismatch(bw, bw.inputs(), ns, joint, joint.inputs(), np, nt, "tangent (backward input)");
  if (m.empty()) m = mismatch(bw, bw.outputs(), 0, joint, joint.outputs(), nf, ng, "gradient");
  return m;
}

// A checked user result as the runtime's Partition: the joint's descriptors, saved(k), and a
// saved-value report rebuilt from the forward graph.
partition::Partition to_partition(const PartitionedGraphs& p, const graph::Graph& joint,
                                  const partition::JointInfo& info) {
  partition::Partition out;
  out.forward = p.forward.graph();
  out.backward = p.backward.graph();
  out.forward.set_name("forward");
  out.backward.set_name("backward");
  size_t np = info.num_primals, nf = info.num_fw_outputs;
  size_t ns = out.forward.outputs().size() - nf;
  const std::vector<Descriptor>& in = joint.input_descs();
  const std::vector<Descriptor>& outd = joint.output_descs();
  std::vector<Descriptor>& fw_in = out.forward.mutable_input_descs();
  std::vector<Descriptor>& fw_out = out.forward.mutable_output_descs();
  std::vector<Descriptor>& bw_in = out.backward.mutable_input_descs();
  std::vector<Descriptor>& bw_out = out.backward.mutable_output_descs();
  std::copy(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(np), fw_in.begin());
  std::copy(outd.begin(), outd.begin() + static_cast<std::ptrdiff_t>(nf), fw_out.begin());
  for (size_t k = 0; k < ns; ++k) {
    fw_out[nf + k] = bw_in[k] = Descriptor::saved(static_cast<int64_t>(k));
    const graph::Value& v = out.forward.value(out.forward.outputs()[nf + k]);
    partition::SavedValue s;
    s.name = v.name;
    s.meta = v.meta;
    s.bytes = partition::value_bytes(v.meta);
    s.reason = k < p.saved_reasons.size() ? p.saved_reasons[k] : "chosen by partition_fn";
    if (v.producer < 0) {
      s.primal_index = static_cast<int>(v.output_index);
      s.producer = "input";
    } else {
      s.producer = std::string(out.forward.nodes()[static_cast<size_t>(v.producer)].op->name);
    }
    out.saved.push_back(std::move(s));
  }
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(np), in.end(),
            bw_in.begin() + static_cast<std::ptrdiff_t>(ns));
  std::copy(outd.begin() + static_cast<std::ptrdiff_t>(nf), outd.end(), bw_out.begin());
  return out;
}

}  // namespace

partition::Partition run_partition(const AotConfig& config, const graph::Graph& joint,
                                   const partition::JointInfo& info) {
  partition::PartitionOptions options{.activation_memory_budget = config.activation_memory_budget};
  if (!config.partition_fn)
    return partition::run_partitioner(config.partitioner, joint, info, options);
  partition::check_memory_budget(config.activation_memory_budget,
                                 "AotConfig::activation_memory_budget");
  JointInfo public_info{info.num_primals, info.num_fw_outputs, config.activation_memory_budget,
                        info.node_budgets};
  PartitionedGraphs p =
      config.partition_fn(GraphView(std::make_shared<const graph::Graph>(joint)), public_info);
  std::string problem = check_partition(p, joint, info);
  if (!problem.empty())
    throw std::invalid_argument(escape_for_message(config.name, 48) +
                                ": AotConfig::partition_fn returned graphs that do not line up "
                                "with the joint graph: " +
                                problem);
  return to_partition(p, joint, info);
}

}  // namespace aot
}  // namespace aotgrad
