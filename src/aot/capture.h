// Stage 1: trace the user's flattened function into a forward graph.
//
// Needs: real (or fake) example inputs. Guarantees: a graph whose inputs are the flat inputs and
// whose outputs are the flat outputs, with which values autograd would track; or an error naming
// what the function did that is not supported yet (input mutation, outputs aliasing inputs or
// each other), never a graph that would compute something else than eager.
#pragma once

#include <vector>

#include "aotgrad/aot.h"
#include "graph/graph.h"

namespace aotgrad::aot {

struct CapturedForward {
  graph::Graph graph{"forward"};
  std::vector<bool> value_requires_grad;  // by value index
  std::vector<bool> output_requires_grad;
};

CapturedForward capture_forward(const FlatFn& fn, const std::vector<Tensor>& inputs,
                                const std::string& fn_name);

}  // namespace aotgrad::aot
