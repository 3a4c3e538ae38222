// The partitioners by name, as AotConfig::partitioner selects them.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "partition/partition.h"

namespace aotgrad::partition {

struct PartitionOptions {
  // Fraction in [0, 1] of the runtime-optimal saved activation bytes the forward may keep
  // (min-cut partitioner; 1 = runtime-optimal cut, 0 = save only graph inputs).
  double activation_memory_budget = 1.0;
};

// A partitioner: splits a joint graph (aot/joint.h) into forward and backward graphs. Needs and
// guarantees what default_partition.h states; must be callable from several threads at once.
using PartitionFn =
    std::function<Partition(const graph::Graph& joint, const JointInfo&, const PartitionOptions&)>;

// The partitioner called `name` ("default", "min_cut"); throws naming the known ones otherwise.
PartitionFn partitioner(const std::string& name);
// Runs the partitioner called `name` (after checking the memory budget lies in [0, 1]).
Partition run_partitioner(const std::string& name, const graph::Graph& joint, const JointInfo& info,
                          const PartitionOptions& options);
std::vector<std::string> partitioner_names();

}  // namespace aotgrad::partition
