// Stage 1: trace the user's flattened function into a functional forward graph and its
// ViewAndMutationMeta.
//
// Needs: the call's inputs and their InputPlan. Guarantees: a graph with one input per plan
// graph input and outputs (new values of mutated inputs, non-aliased user outputs, intermediate
// bases of aliased outputs) — or, for inference with keep_input_mutations, copy_ nodes into the
// mutated inputs instead of the first group — and the metadata the runtime needs to make the
// call behave like eager (including the final geometry of inputs whose metadata was mutated);
// or an error naming what is not supported. Inside the function, autograd::grad records the
// gradient's ops into the forward graph, requires_grad_() is honoured (inputs' flags are set on the
// caller's tensors, leaves made inside are returned as leaves), and tensors built from data become
// aotgrad.tensor_constant nodes; a tensor the function captured is refused.
#pragma once

#include <string>
#include <vector>

#include "aot/analysis.h"
#include "aot/input_plan.h"
#include "aotgrad/aot.h"
#include "graph/graph.h"

namespace aotgrad::aot {

// An error eager's backward raises if, and only if, it runs the VJP of the forward node whose
// first result is `at`: a node no gradient reaches never reads what it saved.
struct BackwardError {
  graph::ValueId at;
  std::string message;
};

struct CapturedForward {
  graph::Graph graph{"forward"};
  std::vector<bool> value_requires_grad;  // by value index
  ViewAndMutationMeta meta;
  bool needs_autograd = false;
  std::vector<BackwardError> backward_errors;
  // Memory budget of each traced node's MemoryBudgetGuard region, by node index (NaN: none).
  std::vector<double> node_budgets;
  bool reads_input_offsets = false;  // trace::Tracer::reads_input_offsets
};

// `input_descs` describes each user input (param(fqn), buffer(fqn), input(k)); graph inputs
// that are synthetic bases are described by their members'.
CapturedForward capture_forward(const FlatFn& fn, const std::vector<Tensor>& inputs,
                                const InputPlan& plan, const std::vector<Descriptor>& input_descs,
                                const AotConfig& config);

}  // namespace aotgrad::aot
