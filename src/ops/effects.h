// The with_effects encoding of an effectful op call (ops/effects.cpp), for the tracer.
#pragma once

#include "ops/op.h"

namespace aotgrad::ops {

// Whether calls of `op` are side effects to thread through effect tokens: the row's `effectful`
// flag (aotgrad.print, custom ops registered effectful), unless it writes in place (the tracer
// functionalizes those first, and the functional row carries the flag). Such rows also have
// Recompute::effectful, so DCE, CSE and the partitioners leave them alone; that class alone also
// covers rows that are not threaded effects (in-place ops, native_batch_norm's hidden update).
bool is_effectful(const OpDef& op);

// The arguments of aotgrad.with_effects.default for calling `op` with (normalized) `args` after
// the effect token `token`: (token, op name, its Tensor arguments, the others encoded as text).
// Throws std::invalid_argument naming the op for an argument the encoding does not carry
// (Tensor[], Scalar).
OpArgs with_effects_args(const OpDef& op, const OpArgs& args, const Tensor& token);

}  // namespace aotgrad::ops
