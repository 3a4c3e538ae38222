// Stages 1-2: lower — a traced function (or a loaded forward graph) and a config in, an Artifact
// out. The one pipeline aot_function, aot_module, GraphProgram and the CLI share:
//
//   front end   trace the function on fake tensors (aot/capture.h), or take the loaded graph
//               → forward graph + ViewAndMutationMeta + which values require grad
//   inference   nothing the caller gets needs autograd: the forward graph, dead code removed,
//               is the inference graph
//   training    build_joint (aot/joint.h) → joint graph; the partitioner (partition/registry.h)
//               → forward + backward graphs + saved values
//
// Needs: for a traced function, the call's real inputs (their dtypes, geometry, requires_grad
// and aliasing are the guards); for a loaded graph, a verified functional graph and which inputs
// require grad. Guarantees: an Artifact that validates (aot/artifact.h), or an error naming what
// the function did that is not supported. `on_graph` sees each graph as it is made ("joint",
// "forward", "backward", "inference"), for dumps and logs.
#pragma once

#include <functional>
#include <string_view>
#include <variant>
#include <vector>

#include "aot/artifact.h"
#include "aot/capture.h"

namespace aotgrad::aot {

// A flat function traced at one call (aot_function, aot_module). The trace runs under the
// calling thread's grad mode, which becomes a guard.
struct TracedFunction {
  FlatFn fn;
  std::vector<Tensor> inputs;           // the call's flat inputs (real tensors)
  std::string key_extra;                // the records of its non-tensor arguments (aot.h)
  std::vector<Descriptor> input_descs;  // one per flat input; empty means input(k) for all
};

// A forward graph loaded from text (GraphProgram, the CLI): verified and functional.
struct LoadedGraph {
  graph::Graph forward;
  std::vector<bool> requires_grad;  // per graph input; none: an inference artifact
};

using LowerInput = std::variant<TracedFunction, LoadedGraph>;
using GraphHook = std::function<void(std::string_view stage, const graph::Graph&)>;

Artifact lower(const LowerInput& input, const AotConfig& config, const GraphHook& on_graph = {});

// lower() in its two halves, so that the on-disk artifact cache (cache/artifact_cache.h) can key
// on what the front end captured before the joint and the partitioner run:
// lower(i, c, h) == finish_lowering(capture(i, c), c, h).
struct Captured {
  CapturedForward forward;  // its meta moved into artifact.meta
  Artifact artifact;        // config, guards, meta and backward_error; no graphs yet
};
Captured capture(const LowerInput& input, const AotConfig& config);
Artifact finish_lowering(Captured captured, const AotConfig& config,
                         const GraphHook& on_graph = {});

// Which values of `g` require grad when its inputs do as `input_requires_grad` says, by the rule
// eager autograd and the tracer follow too (ops::result_requires_grad).
std::vector<bool> values_requiring_grad(const graph::Graph& g,
                                        const std::vector<bool>& input_requires_grad);

}  // namespace aotgrad::aot
