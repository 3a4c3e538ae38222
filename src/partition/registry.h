// The partitioners by name, as AotConfig::partitioner selects them.
#pragma once

#include <string>
#include <vector>

#include "partition/partition.h"

namespace aotgrad::partition {

struct PartitionOptions {
  // Fraction in [0, 1] of the runtime-optimal saved activation bytes the forward may keep
  // (min-cut partitioner; 1 = runtime-optimal cut, 0 = save only graph inputs).
  double activation_memory_budget = 1.0;
};

// Runs the partitioner called `name` ("default", ...); throws naming the known ones otherwise.
Partition run_partitioner(const std::string& name, const graph::Graph& joint, const JointInfo& info,
                          const PartitionOptions& options);
std::vector<std::string> partitioner_names();

}  // namespace aotgrad::partition
