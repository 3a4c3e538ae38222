// The cpp backend's memory planner: liveness over the schedule's steps, and which generated
// kernel writes its result into the buffer of an input that dies there (Inductor's in-place
// buffer reuse), so a chain of extern calls and kernels holds one buffer per link instead of two.
//
// Needs: a Schedule of `g` (schedule.h). Guarantees: the returned Liveness frees each value after
// its last reading step (backends/liveness.h). Kernel::reuse[j] names an input whose buffer
// output j may take: the kernel has no reduction (each element is read at its own index before
// being written), the input is computed inside the graph (never a caller's tensor), its last use
// is this kernel, and its traced dtype and shape are the output's with unit inner stride. The
// runner still checks the actual tensor (contiguous, sole owner of its storage, not a view) and
// allocates when it does not fit; codegen drops __restrict on both pointers of such a pair. An
// output written into a cat's slice (cat_fusion.h) takes no input's buffer; a cat step reads its
// parts' kernel outputs (the fallback copies them) and writes the cat's result.
// Outputs and saved values are the buffers their step wrote: nothing is copied on the way out.
// The caching allocator (tensor/allocator.h) already hands a freed block to the next request of
// its size class, so buffers freed at last use are reused across steps without a plan here.
#pragma once

#include "backends/cpp/schedule.h"
#include "backends/liveness.h"

namespace aotgrad::backends::cpp {

// `reuse_buffers` false: liveness only (every Kernel::reuse -1), to measure the reuse.
Liveness plan_memory(const graph::Graph& g, Schedule& s, bool reuse_buffers = true);

}  // namespace aotgrad::backends::cpp
