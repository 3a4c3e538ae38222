// The partitioner a lowering uses: a user's AotConfig::partition_fn (aotgrad/compiler.h), checked,
// or the built-in one AotConfig::partitioner names.
//
// Needs: a joint graph (aot/joint.h) and its JointInfo. Guarantees: a Partition whose forward
// takes the joint's primals and returns its forward outputs then the saved values, whose backward
// takes the saved values then the joint's tangents and returns its gradients, each with the
// joint's metadata and descriptors (saved(k) on saved values); or, for a user partition that does
// not line up, std::invalid_argument: one line naming the function, the graph and the mismatch.
#pragma once

#include "aotgrad/aot.h"
#include "partition/partition.h"

namespace aotgrad::aot {

partition::Partition run_partition(const AotConfig& config, const graph::Graph& joint,
                                   const partition::JointInfo& info);

}  // namespace aotgrad::aot
