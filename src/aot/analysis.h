// ViewAndMutationMeta: what a traced function did to its inputs and how its outputs alias, in
// one plain struct (PyTorch's ViewAndMutationMeta, InputAliasInfo and OutputAliasInfo). Plain
// data: ops are named, never pointed to, so the struct prints, compares and serializes (it is part
// of the Artifact, aot/artifact.h); instantiate resolves the names once into the runtime's form.
#pragma once

#include <string>
#include <vector>

#include "trace/functionalize.h"

namespace aotgrad::aot {

// One step of a view chain (trace::ViewStep) with its ops by name. Tensor slots of `args` and
// `piece_args` hold undefined tensors: the viewed tensor is filled in at replay.
struct ViewReplayStep {
  std::string op;
  ops::OpArgs args;
  bool grad_mode = true;
  std::string piece_of;  // empty unless the step selects a piece of split / chunk / unbind
  ops::OpArgs piece_args;
  size_t piece = 0;
  size_t piece_group = 0;
  bool written_after = false;
  bool plain = false;
};
ViewReplayStep to_replay_step(const trace::ViewStep& step);
// The runtime form; throws std::invalid_argument naming an op that is not in the table.
trace::ViewStep resolve(const ViewReplayStep& step);
std::vector<ViewReplayStep> to_replay_chain(const std::vector<trace::ViewStep>& chain);
std::vector<trace::ViewStep> resolve(const std::vector<ViewReplayStep>& chain);

struct InputAliasInfo {  // one per graph input
  bool is_leaf = true;
  bool requires_grad = false;
  bool mutates_data = false;
  bool mutates_metadata =
      false;  // t_, as_strided_, ...: see ViewAndMutationMeta::metadata_mutations
  bool mutations_hidden_from_autograd = false;  // every write went through a detach()ed alias
  bool mutations_under_no_grad = false;         // every write happened under no_grad
  bool keep_in_graph = false;  // the mutation is a copy_ inside the graph (inference only)
  // An input an as_strided read in place (its window absolute over the caller's storage, possibly
  // past the input's own elements) before any write to it: where it, or another input of its
  // caller storage, is written, the training runtime passes it as a copy of its whole storage
  // with its own geometry, not as a contiguous clone.
  bool read_in_place = false;
};

enum class OutputType : uint8_t {
  non_alias,
  alias_of_input,
  is_input,
  alias_of_intermediate_save_as_output,
  alias_of_intermediate,
  alias_of_intermediate_base_is_user_output,
  unsafe_view_alias,
};
std::string_view output_type_name(OutputType t);

struct OutputAliasInfo {  // one per user output
  OutputType type = OutputType::non_alias;
  // alias_of_input: graph input; is_input: user input; alias_of_intermediate*: intermediate base;
  // alias_of_intermediate_base_is_user_output: user output. -1 otherwise.
  int base = -1;
  int graph_output = -1;  // non_alias / unsafe_view_alias: forward graph output holding it
  bool requires_grad = false;
  std::vector<ViewReplayStep> view_chain;  // replayed on the base to regenerate the alias
  // The function made this tensor a leaf that requires grad (requires_grad_() on an intermediate,
  // a view or a literal): the runtime calls requires_grad_() on the result, which the graph
  // returns without history.
  bool requires_grad_set_inside = false;
  // alias kinds: the output is (a view of) a detach()ed alias the function wrote through with
  // grad on, which eager gave a history of its own (trace::Tracer::detached_history). The
  // runtime replays view_chain up to step `history_step` (the detach) on the base, gives that
  // tensor the history of intermediate base `history_base`, and replays the rest on it. -1: none.
  int history_base = -1;
  int history_step = -1;
  // alias_of_input: the function made this view after changing the input's geometry in place
  // (t_, transpose_ with grad on). Eager made its history after that change's version bump, so
  // the history stays current when the runtime replays the change on the caller's tensor after
  // regenerating the output; a view made before it gets a stale history, regenerated as
  // as_strided of its base, as eager's (they differ where as_strided reaches past its operand).
  bool made_after_metadata_mutation = false;
  // Such an output made from user input `own_views_of_input` in its new geometry, when that
  // change was made under no_grad: view_chain[own_views_from..] are its own view steps. Eager's
  // history is the input's after the change (its node kept, or regenerated from its base when
  // it is a view) followed by those steps; the runtime replays them on the caller's tensor once
  // it has the new geometry (AotProgramFuzz, seed 913670). -1: none.
  int own_views_of_input = -1;
  int own_views_from = -1;
  // Those steps start from a view of the input made before the change (view_chain[..
  // own_views_from] made it), whose history eager regenerated at its use after the change as an
  // as_strided of its base with its geometry, this one: the runtime starts there, not from the
  // caller's tensor (AotProgramFuzz, seed 1116825: an as_strided reaching past that view drops
  // the base's elements outside it).
  bool own_views_start_made_before = false;
  IntList start_sizes, start_strides;
  int64_t start_storage_offset = 0;
  // The alias kinds: an earlier output that is this very tensor in eager (one view returned
  // twice). The runtime returns that one again rather than a second regenerated view. -1: none.
  int same_as = -1;
  // An alias_of_input of a synthetic base whose chain passes through user input `from_input`, a
  // member the caller made as a special view (under no_grad, or a piece of a multi-output view):
  // replayed from that caller's tensor, view_chain[from_input_step..], so that it inherits the
  // creation eager's view of it has (autograd/view_creation.h). -1: from the graph input.
  int from_input = -1;
  int from_input_step = 0;
};

// requires_grad_() on a user input inside the function: the caller's tensor ends with this flag,
// set before the graphs run so that autograd connects the input (PyTorch reads the flags after
// tracing the same way).
struct RequiresGradChange {
  size_t input = 0;  // user input
  bool requires_grad = false;
};

// A user input whose geometry the function changed in place (t_, transpose_, as_strided_, ...).
// Shapes are specialized (the guards pin each input's sizes, strides and offset), so the new
// geometry is a constant of the specialization: the runtime applies it with as_strided_ after the
// call instead of reading it from a graph output, as PyTorch must with dynamic shapes.
struct MetadataMutation {
  size_t input = 0;  // user input (duplicates: the first occurrence only)
  // False when the ops left the geometry as it was (t_ twice, squeeze_ of a size-2 dim): not a
  // mutation, but eager bumped the version counter, so the runtime bumps it too.
  bool changed = true;
  IntList sizes, strides;
  int64_t storage_offset = 0;
  bool under_grad = false;  // some change was made with grad mode on: autograd records the replay
  // The caller's tensor, no view in eager, was last written with grad on while its geometry was
  // this one, every change made under no_grad: eager records that write on its node in that
  // geometry, so the gradient of the geometry it ends with reaches the write's backward as it is
  // laid out. The runtime writes the new value back in it (MutationEpilogue). Unset: written in
  // its own geometry, or a change was recorded (under_grad: the runtime replays it with grad on).
  bool written_in_other_geometry = false;
  IntList written_sizes, written_strides;
  int64_t written_storage_offset = 0;
  // Set only when the changes mixed grad modes (t_ with grad on, then transpose_ under no_grad):
  // each run of one mode, in order, with the geometry it left (the last is the one above). Eager
  // recorded the runs made with grad on on the tensor's node and not the others, whose node then
  // takes the gradient of the new geometry as it is; the runtime replays each run in its mode
  // (AotProgramFuzz, seed 3147838). Empty: one mode, replayed at once (`under_grad`).
  struct Run {
    IntList sizes, strides;
    int64_t storage_offset = 0;
    bool under_grad = false;
  };
  std::vector<Run> runs;
};

struct ViewAndMutationMeta {
  std::vector<InputAliasInfo> input_info;
  std::vector<OutputAliasInfo> output_info;
  // Forward graph outputs are (new values of mutated inputs, non-aliased user outputs,
  // intermediate bases); these say which graph input each mutation writes to, and the counts.
  std::vector<size_t> mutated_inputs;
  // Applied after the data mutations, in order.
  std::vector<MetadataMutation> metadata_mutations;
  std::vector<RequiresGradChange> input_requires_grad_changes;
  size_t num_user_graph_outputs = 0;
  size_t num_intermediate_bases = 0;
  bool keep_input_mutations = false;

  std::string to_string() const;
};

}  // namespace aotgrad::aot
