// The interpreter backend: runs a graph node by node with the eager kernels.
//
// Needs: a verified graph without in-place ops. Guarantees: each value is released right after
// its last use (inputs included, through the boxed convention); kernels are called directly,
// without dispatch or autograd. The returned callable is not thread-safe (it reuses per-node
// argument buffers); compile once per thread if you call it from several threads.
#pragma once

#include "backends/backend.h"

namespace aotgrad::backends {

CompiledGraph compile_interpreter(const graph::Graph& g);

}  // namespace aotgrad::backends
