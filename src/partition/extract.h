// Building a subgraph of the joint graph: the nodes needed for some outputs, given some values as
// inputs. Shared by the partitioners.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "partition/partition.h"

namespace aotgrad::partition {

// Copies into a new graph the joint nodes needed to compute `outputs` from `inputs` (values
// listed in `inputs` become graph inputs, in that order, with the given descriptors). Throws
// std::logic_error when an output depends on a value that is neither an input nor computable.
graph::Graph extract_subgraph(const graph::Graph& joint, const std::string& name,
                              const std::vector<graph::ValueId>& inputs,
                              const std::vector<Descriptor>& input_descs,
                              const std::vector<graph::ValueId>& outputs,
                              const std::vector<Descriptor>& output_descs);

// The tail every partitioner shares: given the joint values that pass from forward to backward
// (`saved`, in the order they will be passed, each with the reason it is kept), builds
//   forward:  (primals...) -> (forward outputs..., saved...)
//   backward: (saved..., tangents...) -> (gradients...)
// with the joint's descriptors on primals, forward outputs, tangents and gradients, saved(k) on
// the saved values of both graphs, and the SavedValue report. Nodes keep their origin.
Partition assemble_partition(const graph::Graph& joint, const JointInfo& info,
                             const std::vector<graph::ValueId>& saved,
                             const std::vector<std::string>& reasons);

// For each node index of `g`, true when it is needed (transitively) by one of `outputs`.
std::vector<bool> needed_nodes(const graph::Graph& g, const std::vector<graph::ValueId>& outputs);

}  // namespace aotgrad::partition
