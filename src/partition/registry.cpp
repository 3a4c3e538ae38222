#include "partition/registry.h"

#include <stdexcept>

#include "partition/default_partition.h"
#include "partition/memory_budget.h"
#include "partition/min_cut.h"
#include "tensor/message_text.h"

namespace aotgrad::partition {

PartitionFn partitioner(const std::string& name) {
  if (name == "default")
    return [](const graph::Graph& joint, const JointInfo& info, const PartitionOptions&) {
      return default_partition(joint, info);
    };
  if (name == "min_cut") return min_cut_partition;
  std::string known;
  for (const std::string& n : partitioner_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown partitioner '" + escape_for_message(name) +
                              "' (known: " + known + ")");
}

Partition run_partitioner(const std::string& name, const graph::Graph& joint, const JointInfo& info,
                          const PartitionOptions& options) {
  // Checked for every partitioner: a budget out of range is a configuration mistake even where
  // the partitioner does not read it.
  check_memory_budget(options.activation_memory_budget, "AotConfig::activation_memory_budget");
  return partitioner(name)(joint, info, options);
}

std::vector<std::string> partitioner_names() {
  return {"default", "min_cut"};
}

}  // namespace aotgrad::partition
