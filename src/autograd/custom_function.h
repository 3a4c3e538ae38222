// The traced form of a custom autograd Function (aotgrad/function.h), for the joint builder.
//
// Under tracing, Function::apply runs forward with grad mode off (its ops join the forward graph
// and autograd tracks none of them) and then records one aotgrad.autograd_function node:
//
//   autograd_function(Tensor[] inputs, Tensor[] outputs, Tensor[] saved, int function) -> Tensor[]
//
// Its results stand for `outputs` (the differentiable ones) and are what the caller sees, so
// autograd tracks them; its VJP runs the user's backward (found by `function`, a process-local
// id) on `saved`. build_joint drops the node from the joint graph (its results are its `outputs`)
// and runs the VJP where the node stood, so backward's ops are traced with fake tensors and the
// partitioners see only ordinary ops. In an inference graph the node runs as the identity.
#pragma once

#include "ops/op.h"

namespace aotgrad::autograd {

const ops::OpDef& autograd_function_op();
inline bool is_autograd_function(const ops::OpDef& op) {
  return &op == &autograd_function_op();
}

// Argument positions of the node.
constexpr size_t kFunctionInputs = 0, kFunctionOutputs = 1, kFunctionSaved = 2;

}  // namespace aotgrad::autograd
