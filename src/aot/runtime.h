// Stage 3: the runtime of one compiled specialization.
//
// Reading guide: run_specialization() is the whole per-call path. Prologue: build the graph
// inputs from the caller's inputs (InputPlan: duplicates dropped, synthetic bases built). Body:
// run the inference graph, or the forward graph without recording and put a CompiledBackward
// node (an ordinary eager autograd node) behind the graph outputs that require grad. Epilogue:
// write the new values of mutated inputs back into the caller's tensors (copy_, recorded by
// autograd only when eager would record it), then assemble the user outputs, regenerating each
// aliased output by replaying its view chain on its base, and last give the caller's tensors the
// geometry that metadata-mutating ops (t_, as_strided_, ...) left them in (as_strided_).
#pragma once

#include <memory>
#include <vector>

#include "aot/analysis.h"
#include "aot/input_plan.h"
#include "aotgrad/aot.h"
#include "backends/backend.h"
#include "partition/partition.h"

namespace aotgrad::aot {

struct Specialization {
  bool is_inference = false;
  backends::CompiledGraph forward;    // training: graph inputs -> (graph outputs..., saved...)
  backends::CompiledGraph backward;   // (saved..., tangents...) -> grads
  backends::CompiledGraph inference;  // inference: graph inputs -> graph outputs
  InputPlan plan;
  ViewAndMutationMeta meta;
  size_t num_graph_outputs = 0;
  std::vector<size_t> tangent_of_output;  // graph output index of each tangent
  std::vector<size_t> grad_of_primal;     // graph input index of each backward output
  std::vector<ops::TensorMeta> output_metas;  // per graph output
  std::vector<partition::SavedValue> saved;
  std::string backward_error;  // raised by backward (an eager version-check error), if any
  std::string fn_name;
  CompiledGraphs text;  // for graphs()
};

std::vector<Tensor> run_specialization(const std::shared_ptr<const Specialization>& spec,
                                       const std::vector<Tensor>& inputs);

}  // namespace aotgrad::aot
