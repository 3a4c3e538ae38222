// The pieces a Runtime (aot/runtime.h) is built from: the per-call frame, the wrapper and body
// interfaces, and the wrappers themselves. Each wrapper is constructed once by instantiate with
// the index lists it needs; before() and after() only walk them.
#pragma once

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "aot/analysis.h"
#include "aotgrad/tensor.h"
#include "backends/backend.h"
#include "partition/partition.h"

namespace aotgrad::aot {

class CompiledBackward;

// Everything one call carries through the wrappers; it lives on the calling thread's stack.
struct CallFrame {
  explicit CallFrame(const std::vector<Tensor>& in) : inputs(in) {}
  const std::vector<Tensor>& inputs;       // the caller's flat inputs
  std::vector<Tensor> graph_inputs;        // after Dedupe and SyntheticBases: the caller's tensors
  std::vector<Tensor> outs;                // graph outputs, saved values stripped
  std::shared_ptr<CompiledBackward> node;  // training: the autograd node of this call
  std::vector<Tensor> result;              // the user outputs
};

class RuntimeWrapper {
 public:
  virtual ~RuntimeWrapper() = default;
  virtual std::string_view name() const = 0;
  virtual void before(CallFrame&) const {}
  virtual void after(CallFrame&) const {}
};

class CompiledBody {
 public:
  virtual ~CompiledBody() = default;
  virtual std::string_view name() const = 0;
  // Runs the graph on f.graph_inputs (moved from when `keep_graph_inputs` is false) and fills
  // f.outs (and f.node).
  virtual void call(CallFrame& f) const = 0;
  // How many tensors the graph returns: f.graph_inputs is made with room for them, so the
  // compiled graph returns its results in that vector without growing it.
  virtual size_t num_graph_outputs() const { return 0; }
};

class RequiresGradChanges final : public RuntimeWrapper {
 public:
  explicit RequiresGradChanges(std::vector<RequiresGradChange> changes)
      : changes_(std::move(changes)) {}
  std::string_view name() const override { return "RequiresGradChanges"; }
  void before(CallFrame& f) const override;

 private:
  std::vector<RequiresGradChange> changes_;
};

class MetadataMutations final : public RuntimeWrapper {
 public:
  // A user output made by view ops of a user input after that input's geometry changed under
  // no_grad (OutputAliasInfo::own_views_of_input): replayed again, once the caller's tensor has
  // the new geometry, by `steps` alone.
  struct OwnViews {
    size_t output = 0;
    size_t input = 0;
    std::vector<trace::ViewStep> steps;
    bool make_leaf = false;
    // OutputAliasInfo::own_views_start_made_before: the steps start from an as_strided of the
    // caller's tensor's base (itself when it is no view) with this geometry.
    bool start_made_before = false;
    IntList start_sizes, start_strides;
    int64_t start_storage_offset = 0;
  };
  // current_outputs: the user outputs made after their input's metadata mutation
  // (OutputAliasInfo::made_after_metadata_mutation), whose view histories the replay keeps.
  MetadataMutations(std::vector<MetadataMutation> m, std::vector<size_t> current_outputs,
                    std::vector<OwnViews> own_views)
      : mutations_(std::move(m)),
        current_outputs_(std::move(current_outputs)),
        own_views_(std::move(own_views)) {}
  std::string_view name() const override { return "MetadataMutations"; }
  void after(CallFrame& f) const override;

 private:
  std::vector<MetadataMutation> mutations_;
  std::vector<size_t> current_outputs_;
  std::vector<OwnViews> own_views_;
};

// Keeps the inputs that are not repeats (PyTorch's AOTDedupeWrapper, strategy 2).
class Dedupe final : public RuntimeWrapper {
 public:
  explicit Dedupe(std::vector<size_t> kept) : kept_(std::move(kept)) {}
  std::string_view name() const override { return "Dedupe"; }
  void before(CallFrame& f) const override;

 private:
  std::vector<size_t> kept_;  // user input of each deduplicated input
};

// Builds the graph inputs from the deduplicated inputs (PyTorch's AOTSyntheticBaseWrapper).
class SyntheticBases final : public RuntimeWrapper {
 public:
  struct Source {
    enum class Kind : uint8_t { plain, common_base, storage_view };
    Kind kind = Kind::plain;
    size_t input = 0;  // deduplicated input (for a base: its first member)
  };
  explicit SyntheticBases(std::vector<Source> sources) : sources_(std::move(sources)) {}
  std::string_view name() const override { return "SyntheticBases"; }
  void before(CallFrame& f) const override;

 private:
  std::vector<Source> sources_;  // one per graph input
};

// Writes each mutated input's new value into the caller's tensor.
class MutationEpilogue final : public RuntimeWrapper {
 public:
  struct Write {
    size_t graph_input = 0;
    size_t output = 0;    // graph output holding the new value
    bool visible = true;  // made with grad on and not through detach(): autograd may record it
    // MetadataMutation::written_in_other_geometry: the caller's tensor takes this geometry for
    // the write (autograd records the copy in it) and gets its own back after.
    bool in_other_geometry = false;
    // The caller's tensor reached that geometry through changes autograd recorded (runs in both
    // modes, MetadataMutation::runs): the switch is recorded too (an as_strided_ with grad on),
    // so the write's backward passes its previous history a gradient it can take.
    bool geometry_recorded = false;
    IntList sizes, strides;
    int64_t storage_offset = 0;
  };
  explicit MutationEpilogue(std::vector<Write> writes) : writes_(std::move(writes)) {}
  std::string_view name() const override { return "MutationEpilogue"; }
  void after(CallFrame& f) const override;

 private:
  std::vector<Write> writes_;
};

// The user outputs from the graph outputs, with aliases regenerated.
class AliasedOutputs final : public RuntimeWrapper {
 public:
  struct Output {
    enum class Kind : uint8_t {
      graph_output,
      user_input,
      alias_of_graph_input,
      alias_of_graph_output,
      alias_of_user_output,
      alias_of_user_input  // replayed from the caller's tensor (OutputAliasInfo::from_input)
    };
    Kind kind = Kind::graph_output;
    size_t index = 0;
    std::vector<trace::ViewStep> chain;  // the alias kinds: replayed on the base
    // A detach()ed alias with a history of its own (OutputAliasInfo::history_base): `chain` ends
    // with the detach; the tensor it makes takes the history of graph output `history`, and
    // `after_history` is replayed on it. SIZE_MAX: none.
    size_t history = SIZE_MAX;
    std::vector<trace::ViewStep> after_history;
    bool plain_tensor = false;  // non_alias: a view the graph made is returned as a plain tensor
    bool make_leaf = false;     // the function made it a leaf that requires grad
    size_t same_as = SIZE_MAX;  // an earlier output that is this very tensor (returned twice)
  };
  AliasedOutputs(std::vector<Output> outputs, bool identity)
      : outputs_(std::move(outputs)), identity_(identity) {}
  std::string_view name() const override { return "AliasedOutputs"; }
  void after(CallFrame& f) const override;

 private:
  static Tensor detached_alias_with_history(const Tensor& base, const Output& out,
                                            const std::vector<Tensor>& outs,
                                            trace::PieceCache& pieces,
                                            std::vector<std::pair<size_t, Tensor>>& made);

  std::vector<Output> outputs_;
  bool identity_;  // every output is graph output k, in order, with nothing else to do
};

// Feeds the graph inputs that follow the plan's (innermost wrapper; aot/runtime_rng.cpp): for a
// graph that draws random numbers, the calling thread's default generator's seed and offset
// (fw_rng_seed(), fw_rng_offset(N)), advancing the generator by the N Philox blocks eager would
// have drawn, before the body runs, as eager reserves draws before computing them; for a graph
// with effectful ops, a fresh effect token (fw_token(0)), and it drops the token the graph
// returns last.
class GraphStateInputs final : public RuntimeWrapper {
 public:
  GraphStateInputs(std::vector<DescriptorKind> kinds, uint64_t rng_blocks, size_t token_outputs)
      : kinds_(std::move(kinds)), rng_blocks_(rng_blocks), token_outputs_(token_outputs) {}
  std::string_view name() const override { return "GraphStateInputs"; }
  void before(CallFrame& f) const override;
  void after(CallFrame& f) const override;

 private:
  std::vector<DescriptorKind> kinds_;  // of each input after the plan's, in order
  uint64_t rng_blocks_;
  size_t token_outputs_;  // trailing outputs of f.outs that are effect tokens
};
// The wrapper for `main` (the forward or inference graph) when it takes inputs after the plan's
// `num_plan_inputs`; null otherwise. Throws std::invalid_argument for an input it cannot feed.
std::unique_ptr<const RuntimeWrapper> graph_state_inputs(const graph::Graph& main,
                                                         size_t num_plan_inputs);

class InferenceBody final : public CompiledBody {
 public:
  InferenceBody(backends::CompiledGraph graph, bool keep_graph_inputs)
      : graph_(std::move(graph)), keep_graph_inputs_(keep_graph_inputs) {}
  std::string_view name() const override { return "InferenceBody"; }
  void call(CallFrame& f) const override;

 private:
  backends::CompiledGraph graph_;
  bool keep_graph_inputs_;
};

// What a CompiledBackward node needs after the call, shared by every node of one runtime.
struct BackwardSpec {
  backends::CompiledGraph backward;
  std::vector<partition::SavedValue> saved;  // names and producers, for version errors
  std::vector<ops::TensorMeta> tangent_metas;
  std::string backward_error;
  std::string fn_name;
};

// The forward graph behind a CompiledBackward autograd node (PyTorch's CompiledFunction).
class AutogradBody final : public CompiledBody {
 public:
  struct Spec {
    backends::CompiledGraph forward;
    size_t num_outputs = 0;                    // forward outputs before the saved values
    std::vector<size_t> tangent_of_output;     // forward output of each tangent
    std::vector<size_t> grad_of_primal;        // graph input of each gradient
    // By gradient (index into grad_of_primal) whose sizes are not its input's: a leaf whose sizes
    // the function changed under no_grad before eager's first use of it with grad, which made its
    // AccumulateGrad in these sizes (geometry_update, fit=False). An accumulator the call makes
    // records them.
    std::vector<std::pair<size_t, IntList>> accumulator_sizes;
    std::vector<size_t> written_inputs;        // graph inputs the epilogue writes
    // InputAliasInfo::read_in_place: passed as a copy of their whole storage where they share a
    // written input's storage (written or not themselves), so the read finds the caller's elements.
    std::vector<size_t> whole_storage_inputs;
    bool keep_graph_inputs = false;
    std::shared_ptr<const BackwardSpec> backward;
  };
  explicit AutogradBody(Spec spec) : s_(std::move(spec)) {}
  std::string_view name() const override { return "AutogradBody"; }
  void call(CallFrame& f) const override;
  size_t num_graph_outputs() const override {
    return s_.num_outputs + (s_.backward ? s_.backward->saved.size() : 0);
  }

 private:
  Spec s_;
};

}  // namespace aotgrad::aot
