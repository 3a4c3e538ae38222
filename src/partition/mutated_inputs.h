// Gives the backward its own copy of each input the compiled call mutates.
//
// The forward graph is functional: `x.mul_(w)` becomes `%x1 = mul(%x, %w)`, and the runtime copies
// %x1 into the caller's tensor after the forward has run. A backward that reads %x (mul's VJP
// needs the old self, as eager's saved `original_self` clone does) would then read the new value,
// or trip the saved-tensor version check. This pass inserts `%x_clone = aten.clone(%x)` at the
// top of the joint graph and points every use of %x at it (forward uses too, so that the clone
// is forward work under every partitioner), so whatever partitioner runs next saves a value the
// epilogue never writes. PyTorch gets the same effect by cloning data-mutated inputs that require
// grad before tracing.
#pragma once

#include "graph/graph.h"
#include "partition/partition.h"

namespace aotgrad::partition {

// Rewrites `joint` (inputs primals..., tangents...) in place. Only primals in
// info.mutated_primals that a backward node (one that depends on a tangent) reads are cloned;
// graph outputs keep naming the primal. Nothing changes when info.mutated_primals is empty.
void clone_mutated_primals_for_backward(graph::Graph& joint, const JointInfo& info);

}  // namespace aotgrad::partition
