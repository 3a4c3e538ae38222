// Internal face of the inplace_view family (inplace_view.cpp): how other layers recognise an
// in-place op that mutates only its argument's geometry.
#pragma once

#include "ops/op.h"

namespace aotgrad::ops {

// True for in-place rows whose functional variant is a view op (t_, transpose_, unsqueeze_,
// squeeze_, as_strided_): they rewrite self's sizes, strides and storage offset and leave the data
// alone. The eager interpreter saves self's old geometry for their VJP and gives a view the op's
// history instead of CopySlices; the tracer turns them into a view step of the tensor.
bool mutates_metadata_only(const OpDef& op);

}  // namespace aotgrad::ops
