// Stage 3: the runtime of one compiled specialization.
//
// Reading guide: a Specialization holds the compiled forward/backward (or inference) callables
// and the index lists the call path walks. run() runs the forward without recording, then puts a
// CompiledBackward node (an ordinary eager autograd node) behind the outputs that require grad,
// so the compiled function's outputs take part in backward() like eager ones.
#pragma once

#include <memory>
#include <vector>

#include "aotgrad/aot.h"
#include "backends/backend.h"
#include "partition/partition.h"

namespace aotgrad::aot {

struct Specialization {
  bool is_inference = false;
  backends::CompiledGraph forward;    // training: primals -> (outputs..., saved...)
  backends::CompiledGraph backward;   // (saved..., tangents...) -> grads
  backends::CompiledGraph inference;  // inference: primals -> outputs
  size_t num_outputs = 0;
  std::vector<size_t> tangent_of_output;  // user output index of each tangent
  std::vector<size_t> grad_of_primal;     // primal index of each backward output
  std::vector<ops::TensorMeta> output_metas;
  std::vector<partition::SavedValue> saved;
  std::string fn_name;
  CompiledGraphs text;  // for graphs()
};

// Runs `spec` on `inputs` (already checked against its guards).
std::vector<Tensor> run_specialization(const std::shared_ptr<const Specialization>& spec,
                                       std::vector<Tensor> inputs);

}  // namespace aotgrad::aot
