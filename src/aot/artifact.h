// The Artifact: everything lowering (aot/lower.h) decided about one specialization, as plain,
// copyable data — the graphs, ViewAndMutationMeta, the guards, the descriptors (carried by the
// graphs), the config that shaped it and the saved-value report. instantiate (aot/runtime.h)
// turns it into a runtime; serialize_artifact writes it in a versioned format (docs/ir.md,
// "Artifacts") that the persistent cache stores. Nothing here points into the op table or a trace:
// ops are named, so an Artifact outlives the process that made it.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "aot/analysis.h"
#include "aot/guard_key.h"
#include "aot/input_plan.h"
#include "aotgrad/aot.h"
#include "graph/graph.h"
#include "partition/partition.h"

namespace aotgrad::aot {

// The AotConfig fields that shaped the graphs, and the compilers they were lowered for.
struct ArtifactConfig {
  std::string name;
  std::string partitioner;
  double activation_memory_budget = 1.0;
  bool keep_inference_input_mutations = false;
  std::string fw_compiler, bw_compiler, inference_compiler;
  bool fuse_attention = false;
  bool operator==(const ArtifactConfig&) const = default;
};
ArtifactConfig artifact_config(const AotConfig& config);

// What the specialization assumed about its call: guard_key(guards) is the key of every call it
// covers (aot/guard_key.h).
struct Guards {
  bool grad_mode = true;
  std::string key_extra;  // the non-tensor records (aot.h, aot_detail::flatten_arg)
  std::vector<InputGuard> inputs;
  InputPlan plan;
};
std::string guard_key(const Guards& guards);

// A graph that may be held as its printed text until it is first read: Artifact::joint of an
// artifact read from this build's own cache. A warm start instantiates the forward and backward
// graphs only, and the joint's text is the largest of the three (its parse took 1.3 of 2.8 ms for
// the 4-block step's three graphs). Copies share one parse; get() is safe to call from several
// threads at once.
class LazyGraph {
 public:
  using Parse = std::function<graph::Graph(const std::string&)>;
  // Implicit: an artifact's joint is assigned the graph lowering built.
  LazyGraph(graph::Graph g = graph::Graph("joint"));  // NOLINT(google-explicit-constructor)
  // `text`, parsed by `parse` at the first get(). A parse that throws is retried by the next get().
  static LazyGraph deferred(std::string text, Parse parse);
  const graph::Graph& get() const;

 private:
  struct State {
    std::mutex mutex;
    std::atomic<bool> ready{false};
    std::string text;
    Parse parse;
    graph::Graph graph;
  };
  std::shared_ptr<State> state_;
};

struct Artifact {
  ArtifactConfig config;
  Guards guards;
  bool is_inference = false;
  // Training: forward (graph inputs) -> (mutated inputs, user outputs, intermediate bases,
  // saved...) and backward (saved..., tangents...) -> gradients, plus the joint they were cut
  // from. Inference: the inference graph alone. Absent graphs are empty (no inputs, no nodes).
  graph::Graph forward{"forward"}, backward{"backward"}, inference{"inference"};
  LazyGraph joint;  // joint.get(): parsed when first read (see LazyGraph)
  ViewAndMutationMeta meta;
  std::vector<size_t> tangent_of_output;  // forward graph output of each backward tangent
  std::vector<size_t> grad_of_primal;     // graph input of each backward output
  std::vector<partition::SavedValue> saved;
  std::string backward_error;  // raised by backward (an eager version-check error), if any
};

// The text and descriptors of an artifact's graphs, and its saved-value report (what
// aot_function's graphs() returns).
CompiledGraphs compiled_graphs(const Artifact& a);

// Versioned serialization (docs/ir.md, "Artifacts"). deserialize_artifact checks the magic,
// version, length and checksum, then every field (graphs parse, verify and print back to the same
// text; indices are in range), so any artifact it returns can be instantiated; anything else throws
// ArtifactError with one line naming the problem. serialize(deserialize(s)) == s.
// 2: saved values' view_of_primal; 3: config fuse_attention; 4: synthetic bases' geometry;
// 5: outputs' detached-alias history; 6: outputs made after a metadata mutation,
// inputs read in place before a write; 7: outputs' own views of an input after a metadata
// mutation, a view returned twice, view steps that leave no _base; 8: the geometry a metadata-
// mutated input was last written in with grad on; 9: inputs that are views of one _base; 10: a
// metadata mutation's runs of one grad mode; 11: aotgrad.hidden_update is a view of its new value;
// 12: inputs read in place whether written or not, and as_strided windows past a written input;
// 13: whether and how each input is a view, and whether it is a leaf (InputGuard::view, leaf);
// 14: outputs replayed from a synthetic base's special member (OutputAliasInfo::from_input)
constexpr uint32_t kArtifactFormatVersion = 14;
std::string serialize_artifact(const Artifact& a);
// Where the bytes come from. `foreign`: anywhere (a file a user hands over, a fuzzer): every check
// above. `own_cache`: an entry of this build's artifact cache, whose key already names this
// aotgrad, its op versions and the config, so the bytes are what serialize_artifact wrote from
// graphs that were verified when they were lowered; once the checksum proves them undamaged the
// graphs are parsed but neither verified nor printed back (those two checks were half of a warm
// start). The field checks of validate_artifact still run, so what returns can be instantiated.
enum class ArtifactSource { foreign, own_cache };
Artifact deserialize_artifact(std::string_view bytes,
                              ArtifactSource source = ArtifactSource::foreign);
// Throws ArtifactError naming the first inconsistency (a count or an index that does not match
// the graphs); what deserialize_artifact checks after reading the fields.
void validate_artifact(const Artifact& a);

}  // namespace aotgrad::aot
