#include "partition/registry.h"

#include <stdexcept>

#include "partition/default_partition.h"

namespace aotgrad::partition {

Partition run_partitioner(const std::string& name, const graph::Graph& joint, const JointInfo& info,
                          const PartitionOptions&) {
  if (name == "default") return default_partition(joint, info);
  std::string known;
  for (const std::string& n : partitioner_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown partitioner '" + name + "' (known: " + known + ")");
}

std::vector<std::string> partitioner_names() { return {"default"}; }

}  // namespace aotgrad::partition
