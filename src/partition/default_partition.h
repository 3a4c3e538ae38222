// The default partition (after PyTorch's default_partition).
//
// Needs: a joint graph with inputs (primals..., tangents...) and outputs (forward outputs...,
// gradients...). Guarantees: the forward graph holds exactly the nodes the forward outputs need;
// every other node needed by a gradient runs in the backward graph; the saved values are the
// forward values (and primals) the backward reads, in joint-graph order. Shapes are static, so a
// backward that needs only a value's shape needs nothing saved for it.
#pragma once

#include "partition/partition.h"

namespace aotgrad::partition {

Partition default_partition(const graph::Graph& joint, const JointInfo& info);

}  // namespace aotgrad::partition
