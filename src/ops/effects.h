// The with_effects encoding of an effectful op call (ops/effects.cpp), for the tracer.
#pragma once

#include "ops/op.h"

namespace aotgrad::ops {

// Whether calls of `op` are side effects to keep in order: the row's `effectful` flag. A row is
// effectful when its recompute class is Recompute::effectful (so DCE, CSE and the partitioners
// leave it alone) and it was marked with mark_effectful. The mark lives here rather than as an
// OpDef member: Recompute::effectful alone also covers ops that are not side effects to thread
// (in-place ops, native_batch_norm's schema-hidden update, functionalized by the tracer).
bool is_effectful(const OpDef& op);
// Marks the row called `name` effectful (custom ops call it for an effectful schema); its
// recompute class must be Recompute::effectful (std::invalid_argument otherwise). Thread-safe.
void mark_effectful(std::string_view name);

// The arguments of aotgrad.with_effects.default for calling `op` with (normalized) `args` after
// the effect token `token`: (token, op name, its Tensor arguments, the others encoded as text).
// Throws std::invalid_argument naming the op for an argument the encoding does not carry
// (Tensor[], Scalar).
OpArgs with_effects_args(const OpDef& op, const OpArgs& args, const Tensor& token);

}  // namespace aotgrad::ops
