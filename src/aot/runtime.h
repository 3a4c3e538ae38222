// Stage 3: instantiate — an Artifact and compilers in, a Runtime out.
//
// A Runtime is the compiled graphs behind a list of wrappers built once, as PyTorch's
// runtime_wrappers compose them (outermost first):
//   RequiresGradChanges  before: requires_grad_() the function applied to caller's inputs
//   MetadataMutations    after (last): as_strided_ the caller's tensors whose geometry the
//                        function changed (t_, as_strided_, ...), or bump their version
//   Dedupe               before: drop inputs that repeat an earlier one
//   SyntheticBases       before: pass overlapping inputs as one base (their _base, or a flat view
//                        of their storage)
//   AliasedOutputs       after: assemble the user outputs, regenerating each alias of an input,
//                        of an intermediate base or of another output by replaying its view chain
//   MutationEpilogue     after (first): copy_ the new value of each mutated input into the
//                        caller's tensor, recorded by autograd when eager would record it
// and the body: the inference graph, or the forward graph behind a CompiledBackward autograd node
// (the training body passes written inputs as clones, so saved old values survive the epilogue).
// Each wrapper holds the index lists it walks, computed at instantiate; the per-call path plans
// nothing. Only the wrappers an artifact needs are in its list.
//
// Thread-safety: a Runtime is immutable; run() may be called from any number of threads at once,
// and the autograd nodes it creates keep what they need alive after the Runtime is gone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "aot/artifact.h"
#include "backends/backend.h"

namespace aotgrad::aot {

// The compiler each graph of an artifact is handed to.
struct Compilers {
  backends::Compiler forward, backward, inference;
};
// The compilers `config` names (bw_compiler / inference_compiler default to fw_compiler); throws
// naming an unknown one.
Compilers named_compilers(const AotConfig& config);
Compilers named_compilers(const ArtifactConfig& config);

struct CallFrame;
class RuntimeWrapper;
class CompiledBody;

class Runtime {
 public:
  Runtime(std::vector<std::unique_ptr<const RuntimeWrapper>> wrappers,
          std::unique_ptr<const CompiledBody> body);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // One call on the caller's flat inputs, which must satisfy the artifact's guards (unchecked:
  // the caller matched the guard key).
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;
  // The wrappers' names, outermost first, then the body's ("Dedupe", ..., "AutogradBody").
  std::vector<std::string> describe() const;

 private:
  std::vector<std::unique_ptr<const RuntimeWrapper>> wrappers_;
  std::unique_ptr<const CompiledBody> body_;
};

// Compiles the artifact's graphs and builds its wrappers. Throws what a compiler throws, or
// std::invalid_argument for a view op the artifact names that this build does not have.
std::shared_ptr<const Runtime> instantiate(const Artifact& artifact, const Compilers& compilers);

}  // namespace aotgrad::aot
