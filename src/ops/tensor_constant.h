// aotgrad.tensor_constant: a tensor literal written into a graph (functional.cpp).
//
// A traced function may build a tensor from data (from_vector, scalar_tensor) and use it; the
// tracer then records it as this op, its elements written as text, so the graph stays one
// self-contained text (docs/ir.md, "Tensor constants") and every run rebuilds the literal fresh,
// as the function would. PyTorch records the same thing as lift_fresh_copy of a module constant.
#pragma once

#include <cstdint>

#include "ops/op.h"

namespace aotgrad::ops {

// Literals larger than this are refused by the tracer (rebuilding them from text every call
// would cost more than passing them as an input).
constexpr int64_t kMaxConstantElements = 65536;

// The arguments of aotgrad.tensor_constant.default for `t`'s values (a real tensor).
OpArgs tensor_constant_args(const Tensor& t);

}  // namespace aotgrad::ops
