#include "partition/registry.h"

#include <stdexcept>

#include "partition/default_partition.h"
#include "partition/memory_budget.h"
#include "partition/min_cut.h"
#include "partition/mutated_inputs.h"

namespace aotgrad::partition {

Partition run_partitioner(const std::string& name, const graph::Graph& joint, const JointInfo& info,
                          const PartitionOptions& options) {
  // Checked for every partitioner: a budget out of range is a configuration mistake even where
  // the partitioner does not read it.
  check_memory_budget(options.activation_memory_budget, "AotConfig::activation_memory_budget");
  // Every partitioner sees a joint graph whose backward reads no input the call mutates.
  graph::Graph rewritten;
  const graph::Graph* g = &joint;
  if (!info.mutated_primals.empty()) {
    rewritten = joint;
    clone_mutated_primals_for_backward(rewritten, info);
    g = &rewritten;
  }
  if (name == "default") return default_partition(*g, info);
  if (name == "min_cut") return min_cut_partition(*g, info, options);
  std::string known;
  for (const std::string& n : partitioner_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown partitioner '" + name + "' (known: " + known + ")");
}

std::vector<std::string> partitioner_names() {
  return {"default", "min_cut"};
}

}  // namespace aotgrad::partition
