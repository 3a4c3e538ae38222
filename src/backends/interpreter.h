// The interpreter backend: runs a graph node by node with the eager kernels.
//
// Needs: a verified graph whose only in-place ops write graph inputs. Guarantees: each value is
// released right after its last use (inputs included, through the boxed convention); kernels are
// called directly, without dispatch or autograd. The returned callable is reentrant: any number
// of threads may call it at once (all per-call state lives in the call).
#pragma once

#include "backends/backend.h"

namespace aotgrad::backends {

CompiledGraph compile_interpreter(const graph::Graph& g);

}  // namespace aotgrad::backends
