// Which results of an op call require grad: PyTorch's rule, written once. Eager dispatch
// (autograd/eager.cpp), the tracer (trace/tracer.cpp) and graph lowering (aot/lower.cpp's
// values_requiring_grad) all ask here, so the three cannot drift apart.
#pragma once

#include "aotgrad/dtype.h"
#include "ops/op.h"

namespace aotgrad::ops {

// Result `result_dtype` of a call of `op` requires grad when grad mode is on, the op has a VJP,
// some tensor input requires grad, and the result is floating point.
inline bool result_requires_grad(const OpDef& op, bool grad_mode, bool any_input_requires_grad,
                                 DType result_dtype) {
  return grad_mode && any_input_requires_grad && op.vjp != nullptr && is_floating(result_dtype);
}

}  // namespace aotgrad::ops
