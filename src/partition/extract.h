// Building a subgraph of the joint graph: the nodes needed for some outputs, given some values as
// inputs. Shared by the partitioners.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace aotgrad::partition {

// Copies into a new graph the joint nodes needed to compute `outputs` from `inputs` (values
// listed in `inputs` become graph inputs, in that order, with the given descriptors). Throws
// std::logic_error when an output depends on a value that is neither an input nor computable.
graph::Graph extract_subgraph(const graph::Graph& joint, const std::string& name,
                              const std::vector<graph::ValueId>& inputs,
                              const std::vector<std::string>& input_descs,
                              const std::vector<graph::ValueId>& outputs,
                              const std::vector<std::string>& output_descs);

// For each node index of `g`, true when it is needed (transitively) by one of `outputs`.
std::vector<bool> needed_nodes(const graph::Graph& g, const std::vector<graph::ValueId>& outputs);

}  // namespace aotgrad::partition
