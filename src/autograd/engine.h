// The backward engine's entry for callers inside the library that hold their outputs in
// something other than a vector (Tensor::backward: one tensor, no vector to allocate per call).
// autograd::backward (aotgrad/autograd.h) is this with vectors.
#pragma once

#include <optional>
#include <span>

#include "aotgrad/tensor.h"

namespace aotgrad::autograd {

// As autograd::backward: `grad_outputs` empty, or one gradient per output.
void backward_of(std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs,
                 std::optional<bool> retain_graph, bool create_graph);

}  // namespace aotgrad::autograd
