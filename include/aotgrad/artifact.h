// Artifacts: what compiling one specialization of a function produced, as data.
//
//   auto step = aotgrad::aot_function(fn);
//   step(x, w);                                       // compiles
//   aotgrad::Artifact a = step.artifact();            // graphs, metadata, guards, descriptors
//   std::string blob = aotgrad::serialize_artifact(a);   // versioned bytes (docs/ir.md,
//   "Artifacts") aotgrad::Artifact b = aotgrad::deserialize_artifact(blob);   // in this or another
//   process aotgrad::CompiledArtifact run = aotgrad::instantiate(b);     // aot.h
//   std::vector<Tensor> out = run({x, w});            // the same results, bit for bit
//
// An Artifact holds the forward, backward, joint and inference graphs (with the typed descriptor
// of every input and output, aotgrad/descriptor.h), ViewAndMutationMeta (how the runtime writes
// mutated inputs back and regenerates aliased outputs), the guards (the inputs' dtypes, geometry,
// requires_grad and aliasing, grad mode, non-tensor arguments), the config that shaped it and the
// saved-value report. It is immutable; copies share it; any number of threads may use it.
#pragma once

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "aotgrad/descriptor.h"

namespace aotgrad {

namespace aot {
struct Artifact;
}

// The graphs of one compiled specialization, as text, their descriptors, and what the forward
// saves for backward.
struct CompiledGraphs {
  bool is_inference = false;
  std::string forward, backward, joint, inference;
  GraphDescriptors forward_descriptors, backward_descriptors, joint_descriptors,
      inference_descriptors;
  std::string saved_report;
  std::string meta;  // ViewAndMutationMeta: input mutations and output aliasing
  size_t num_saved = 0;
  size_t saved_bytes = 0;             // all saved values
  size_t saved_activation_bytes = 0;  // saved values that are not graph inputs
};

// Bytes deserialize_artifact cannot read: another format version, a truncated or corrupt blob,
// a graph this build cannot parse. what() is one line naming the problem.
class ArtifactError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

class Artifact {
 public:
  explicit Artifact(std::shared_ptr<const aot::Artifact> data);
  const std::string& name() const;  // the compiled function's name (AotConfig::name)
  bool is_inference() const;
  CompiledGraphs graphs() const;
  const aot::Artifact& data() const { return *data_; }
  const std::shared_ptr<const aot::Artifact>& shared() const { return data_; }

 private:
  std::shared_ptr<const aot::Artifact> data_;
};

// The versioned byte form (docs/ir.md, "Artifacts"); serialize_artifact(deserialize_artifact(s)) ==
// s.
std::string serialize_artifact(const Artifact& artifact);
// Throws ArtifactError for anything serialize_artifact of this build did not write.
Artifact deserialize_artifact(std::string_view bytes);

}  // namespace aotgrad
