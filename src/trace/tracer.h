// The Trace interpreter: records every op call into a Graph instead of running it, and
// functionalizes as it goes (see functionalize.h).
//
// Reading guide: inputs are fake tensors (metadata, no memory) bound to graph values through
// TensorImpl::trace. call() first brings every argument up to date (a view whose storage was
// mutated since it was last used is regenerated from the storage root), then either records the
// op (record) or, for an in-place op, records its functional variant and scatters the new value
// back into the storage root (functionalize_inplace). View results share their input's fake
// storage and extend its view chain, so aliasing stays visible to the caller after the trace.
// Every result of a multi-output view op (split, chunk, unbind) is such a view. A metadata-
// mutating op (t_, as_strided_, ...) records its view op and gives the tensor the view's geometry
// and chain (functionalize_metadata); the data is untouched.
// Autograd: the fakes carry no autograd nodes. The tracer keeps, per graph value, whether
// autograd tracks it, and answers autograd::grad (traced_grad.cpp: the gradient's ops are
// recorded into the graph), backward and requires_grad_ on its fakes itself (autograd/traced.h).
// Views carry eager's creation metadata (autograd/view_creation.h), so in-place ops on them raise
// eager's errors. A real tensor the function uses (a literal it built from data) is recorded as
// an aotgrad.tensor_constant node and stands for that node's value from then on.
// A detach() result is a step of its base's view chain (it shares the storage), but for autograd
// a tensor of its own: a write through it with grad on gives it (and its views) a history, kept
// per detach() call (detached_history) and joined to the storage's data on every replay, while
// the root keeps its own history (the write is hidden from it).
// Thread-safety: one tracer per thread, used while pushed.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autograd/traced.h"
#include "autograd/view_creation.h"
#include "graph/graph.h"
#include "ops/op.h"
#include "trace/functionalize.h"

namespace aotgrad::trace {

class Tracer final : public ops::Interpreter, public autograd::TracedAutograd {
 public:
  explicit Tracer(graph::Graph& graph) : graph_(graph) {}

  std::string_view name() const override { return "Trace"; }
  std::vector<Tensor> call(const ops::OpDef& op, ops::OpArgs& args) override;

  // ---- autograd on traced tensors (autograd/traced.h) ----
  bool owns(const Tensor& t) const override { return traced_here(t); }
  std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                           const std::vector<Tensor>& grad_outputs, bool retain_graph,
                           bool allow_unused) override;
  void backward(const std::vector<Tensor>& outputs) override;
  void set_requires_grad(const Tensor& t, bool flag) override;
  bool base_requires_grad(const Tensor& t) const override;

  // A fake tensor standing for a new graph input (the root of its own storage) with `example`'s
  // metadata and requires_grad.
  Tensor add_input(const Tensor& example, std::string_view name_hint, Descriptor desc = {});
  // A fake view of `base` (a tracked tensor) with the given geometry, recorded as as_strided, that
  // autograd's view rules treat as the caller's tensor: made normally where `creation` is nullopt
  // (then it may be written in place with grad on, however the fake was recorded), else as
  // `creation` says, with its history and whether it was written since it was made.
  Tensor add_strided_view(const Tensor& base, const IntList& sizes, const IntList& strides,
                          int64_t storage_offset, bool requires_grad,
                          const std::optional<autograd::SpecialCreation>& creation);
  // Records whether the caller's tensor that the user input `fake` stands for is a view in
  // eager: a fake's own view-ness follows the graph inputs (a view passed alone is a root there,
  // a member of a synthetic base a view of it), and a geometry changed under no_grad takes its
  // gradient differently on a view (functionalize_metadata).
  void note_caller_view(const Tensor& fake, bool is_view);
  // The fake of a user input that the caller made as a view under no_grad or by a multi-output
  // op: the fake is a root, yet eager's rules for such views (autograd/view_creation.h) hold for
  // it, and for the views the function makes of it with grad on, which inherit the creation.
  void note_caller_creation(const Tensor& fake, const autograd::SpecialCreation& creation);
  // The fake of an input that is, in the caller, a view of the _base named `base` (any number,
  // the same for every input viewing it), which other inputs view through graph inputs of their
  // own (aot::InputPlan::same_base_as). A write with grad on through one of them gives that _base
  // a history (CopySlices), and eager's views of it, made before or after, then require grad: their
  // history is regenerated from the base's. Their gradient reaches the base's part that was not
  // written, whose old history (none: the views did not require grad) takes nothing.
  void note_caller_base(const Tensor& fake, size_t base);
  // The fake of an input whose caller's storage another input shares through a graph input of its
  // own (`group`: the same number for each of them). A write to one reaches the caller's storage
  // only after the call, so an as_strided read in place of the other after it is refused.
  void note_shared_storage(const Tensor& fake, size_t group);
  // An untracked fake tensor bound to an existing value of the graph.
  Tensor bind(graph::ValueId v, bool requires_grad);
  // The value a traced tensor currently stands for (regenerated first if stale); a real tensor
  // becomes a constant first (lift). Throws naming `what` for a fake of another trace.
  graph::ValueId value_of(const Tensor& t, const std::string& what);
  // Makes the function read `real` as `fake` (a tensor of this trace) from now on, as a literal
  // lifted to `fake` would be, but without counting it as captured: aot_module's stand-ins for
  // parameters a module also holds outside its registered slot (LibTorch's value form,
  // `w = register_parameter("w", t)`). A no-op unless `fake` is this trace's and `real` is real.
  void substitute(const Tensor& real, const Tensor& fake);
  // The fake a real tensor was lifted to, if it was; `t` otherwise.
  Tensor traced_form(const Tensor& t) const;
  // A description of a lifted real tensor still alive now, after the function returned: it was
  // captured, not built by the function, and a constant would go stale. Empty when none.
  std::string captured_constant() const;
  bool traced_here(const Tensor& t) const { return t.defined() && t.impl()->trace.owner == this; }
  // Whether autograd would track the value.
  bool requires_grad(graph::ValueId v) const;

  const std::vector<StorageState>& storages() const { return storages_; }
  // The functionalization record of a traced tensor, or null for untracked ones.
  const TensorState* state_of(const Tensor& t) const;
  // Whether a metadata-mutating op (t_, as_strided_, ...) was applied to `t` (even one that
  // left its geometry as it was: eager still bumps the version counter), and whether one ran with
  // grad mode on (the runtime then replays the change where autograd sees it). storage_touched:
  // one was applied to `t` or to another tensor sharing its storage (a view, a detach()): the
  // version counter lives on the storage, so eager bumps `t`'s too.
  // `grad_read_sizes`: the sizes, each once, in which an op with a VJP read `t` with grad on
  // after an op changed `t` itself, or at any time for an input that is a leaf requiring grad:
  // eager made the edge to its node, an AccumulateGrad for such a leaf, in the sizes of the first.
  struct MetadataTouch {
    bool touched = false;
    bool under_grad = false;
    bool storage_touched = false;
    std::vector<IntList> grad_read_sizes;
  };
  MetadataTouch metadata_touch(const Tensor& t) const;
  // The geometry `t` (a tensor a metadata-mutating op touched) had when the last write with grad
  // on, not through a detach(), reached its storage after the first such op; nullopt when none
  // did. Eager records that write on the tensor's node in that geometry.
  struct Geometry {
    IntList sizes, strides;
    int64_t storage_offset = 0;
  };
  std::optional<Geometry> geometry_at_last_visible_write(const Tensor& t) const;
  // The metadata-mutating ops applied to `t` itself, in order, as runs of one grad mode: each
  // run's mode and the geometry `t` had after its last op. Eager records a run made with grad on
  // on `t`'s node and leaves a run made under no_grad unrecorded (the node then takes the
  // gradient of the new geometry as it is), so replaying `t`'s final geometry in one mode is
  // exact only when there is one run.
  struct GeometryRun {
    bool grad_on = false;
    Geometry after;
  };
  std::vector<GeometryRun> metadata_runs(const Tensor& t) const;
  // The runs of the ops applied to `t` after the last write with grad on reached its storage
  // (geometry_at_last_visible_write), all of them when none did. Eager's node for `t` is that
  // write's, at that geometry, plus the runs after it made with grad on.
  std::vector<GeometryRun> metadata_runs_after_last_visible_write(const Tensor& t) const;
  // The runs before that write (empty when there was none).
  std::vector<GeometryRun> metadata_runs_before_last_visible_write(const Tensor& t) const;
  // Whether the view `ts` was made after the last metadata-mutating op on its storage and before
  // any write after it: eager made its history after that op's version bump, so the history is
  // current, not stale.
  bool made_after_metadata_mutation(const TensorState& ts) const;
  // Whether a metadata-mutating op was applied to `ts`'s storage after `ts` was made.
  bool made_before_metadata_mutation(const TensorState& ts) const;
  // Every tracked tensor's record, by TensorImpl::trace.alias.
  const std::vector<TensorState>& tensor_states() const { return tensors_; }
  // The history eager gives a detach()ed alias written through with grad on: d = x.detach();
  // d.sub_(w) leaves x's history alone (the write is hidden from it) but makes d, and the views
  // of d, tensors that require grad, with a history of their own. For a tracked tensor whose
  // last detach() step (in its chain, at `step`) has such a history: that detach() call's id and
  // the graph value that is the detached alias now (its current data, its own history). A step
  // that took a geometry changed under no_grad (ViewStep::geometry) has one too, the value
  // aotgrad.geometry_update makes; its id is SIZE_MAX - the change's index, apart from detach()'s.
  struct DetachedHistory {
    size_t step = 0;
    size_t id = 0;
    graph::ValueId value;
  };
  std::optional<DetachedHistory> detached_history(const TensorState& ts);
  // Eager version-counter errors: the VJP of `node` would read a saved value written in place
  // after it was saved. Eager raises only when its backward runs that node's VJP.
  struct BackwardError {
    size_t node = 0;
    std::string message;
  };
  const std::vector<BackwardError>& backward_errors() const { return backward_errors_; }
  // Nodes (by index) an autograd::grad without retain_graph ran through: a later backward
  // through them fails, as in eager.
  const std::vector<bool>& freed_nodes() const { return freed_nodes_; }

  // requires_grad_() inside the function, on a graph input that is its own root (not a view,
  // not mutated): the caller's tensor must end with `requires_grad`.
  struct RequiresGradChange {
    size_t graph_input = 0;
    bool requires_grad = false;
  };
  const std::vector<RequiresGradChange>& input_requires_grad_changes() const {
    return input_requires_grad_changes_;
  }
  // A tensor made a leaf that requires grad inside the function (requires_grad_() on an
  // intermediate or a view, or a literal that requires grad): its value is a detach() of the
  // old one, so no gradient flows past it, as none flows past an eager leaf.
  struct InteriorLeaf {
    graph::ValueId value;
    const TensorImpl* tensor = nullptr;
    const Storage* storage = nullptr;
    bool requires_grad = true;    // false again after requires_grad_(false)
    bool used_with_grad = false;  // an op autograd tracks read it: its .grad() would fill
  };
  const std::vector<InteriorLeaf>& interior_leaves() const { return interior_leaves_; }
  // The MemoryBudgetGuard budget (include/aotgrad/memory_budget.h) live when each node of the
  // graph was recorded, by node index; NaN where no guard was alive (the min-cut partitioner
  // reads them as JointInfo::node_budgets).
  std::vector<double> node_budgets() const;
  // Whether the trace used where an input starts in its storage: an as_strided (whose offset is
  // absolute) applied to a view of an input. Traces that did not are valid for an input at any
  // storage offset, so their guards leave offsets out.
  bool reads_input_offsets() const { return reads_input_offsets_; }
  graph::Graph& graph() { return graph_; }
  // The last effect token (the value the graph returns as fw_token(0)); undefined when the trace
  // made no effectful call.
  const Tensor& effect_token() const { return token_; }

 private:
  struct SavedUse {
    size_t storage;
    uint64_t generation;
    std::string what;  // "input 0 of aten.mul.Tensor"
    size_t node;       // the node whose VJP reads it
  };
  struct Lifted {
    std::weak_ptr<TensorImpl> real;
    Tensor fake;
    bool substituted = false;  // by substitute(): an input's stand-in, not a constant
  };

  graph::NodeArg to_node_arg(const ops::OpDef& op, const ops::Arg& a, size_t index);
  std::vector<Tensor> record(const ops::OpDef& op, ops::OpArgs& args, bool track);
  std::vector<Tensor> functionalize_inplace(const ops::OpDef& op, ops::OpArgs& args);
  std::vector<Tensor> functionalize_metadata(const ops::OpDef& op, ops::OpArgs& args);
  // The new value of the storage root after `updated` is written into tensor `state_index`, and
  // the new value of the last detach()ed alias on the way (undefined when there is none).
  struct Scattered {
    Tensor root;
    Tensor detached;
  };
  Scattered scatter_into_root(size_t state_index, const Tensor& updated);
  Tensor scatter_through_expand(const std::vector<ViewStep>& chain, size_t e, const Tensor& base,
                                const Tensor& updated);
  Scattered scatter_as_strided(const std::vector<ViewStep>& chain, size_t k, size_t storage,
                               bool rebase, const Tensor& u, Tensor detached);
  // Whether as_strided `step` on storage `s` (applied to the root itself: on_root) must be
  // rebased onto the root's elements (rebased_as_strided) rather than address the root's value,
  // which is laid out as the storage or, unwritten, is the input itself. Throws where neither is
  // possible: the root is not dense, the window reaches past its elements, or a detach() of the
  // root is in between.
  bool as_strided_needs_rebase(StorageState& s, const ViewStep& step, bool writing, bool on_root);
  // Whether the window of as_strided `step` reaches only the elements of storage `s`'s root, in
  // a root that can be rebased onto (dense, or gapped).
  bool window_in_root(const StorageState& s, const ViewStep& step) const;
  Tensor rebased_as_strided(const StorageState& s, const ViewStep& step, const Tensor& root);
  Tensor permuted(const Tensor& t, const IntList& dims);
  Tensor storage_copy(const StorageState& s, const Tensor& root);
  // `value` laid into a zeroed 1-D image of a storage from offset 0 by the geometry (sizes,
  // strides), which must not overlap itself: its elements where such a tensor's are, zeros in the
  // gaps.
  Tensor image_of(const Tensor& value, const IntList& sizes, const IntList& strides);
  // Records view step `step` applied to `base`, under the step's grad mode; a detach() step
  // whose alias has a history of its own yields that history with the current data.
  Tensor apply_step(const ViewStep& step, const Tensor& base);
  void note_saved_modified(const ops::OpDef& op, size_t storage);
  void check_stale_read_past_input(const StorageState& s, const std::vector<ViewStep>& chain) const;
  // A user's as_strided on `storage`: refused after a write unless the root's value is laid out
  // as its storage; before one, reads the input in place (StorageState::read_in_place).
  void check_as_strided(size_t storage);
  // Before any write (check_as_strided passed), the view `ts` read in place: its steps applied
  // to the input itself, for an as_strided reaching past the view. An as_strided step of the
  // chain may have been rebased onto a copy of the input's elements (rebased_as_strided), which
  // holds nothing past them. Empty when the view's value already reads the caller's storage.
  std::optional<graph::ValueId> in_place_view(const TensorState& ts);
  // After a write to an input, a user's as_strided of `base` (a view of it, or the input) whose
  // window reaches storage elements outside the input: a 1-D image of the caller's storage from
  // offset 0, read in place (StorageState::read_in_place) with the input's new value scattered
  // in by its geometry, then `base`'s value scattered in by base's, so that the window's
  // gradient reaches base's elements only, as eager's AsStridedBackward restricts it. Empty
  // where that does not apply (the caller then rebases or refuses as before).
  std::optional<graph::ValueId> image_past_written_input(const TensorState& ts, const Tensor& base,
                                                         const ViewStep& step, bool on_root);
  // Whether storage `storage` is a written input whose new value can be laid into an image of
  // the caller's storage: dense or gapped, its geometry unchanged, not covering its storage.
  bool imaged_after_write(size_t storage) const;
  // That image: 1-D from offset 0, at least `extent` long, the caller's elements read in place
  // (StorageState::read_in_place) and the root's value scattered in by the input's geometry,
  // taking gradient where `root_grad`.
  Tensor storage_image(size_t storage, int64_t extent, bool root_grad);
  // A view through as_strided reaching past a written input, read again after a later write
  // (replay): the window of the storage's image, where eager's regenerated history gives no
  // gradient to the elements outside the input.
  bool regenerated_past_written_input(const StorageState& s, const ViewStep& step) const;
  Tensor imaged_as_strided(const StorageState& s, const ViewStep& step);
  // Records `name` on `args` (normalized) without functionalization tracking; its first result.
  Tensor call_untracked(std::string_view name, ops::OpArgs args);
  Tensor replay(StorageState& s, const std::vector<ViewStep>& chain, size_t steps);
  void sync(const Tensor& t);
  void sync_args(ops::OpArgs& args);
  void track_root(const Tensor& t, int input_index);
  void track_view(const Tensor& view, const Tensor& parent, ViewStep step);
  void note_saved(const ops::OpDef& op, const ops::OpArgs& args, const std::vector<Tensor>& outs);
  void check_leaf_mutation(const ops::OpDef& op, const TensorState& ts, bool hidden,
                           graph::ValueId self_value) const;
  void mark_requires_grad(graph::ValueId v, bool r);
  Tensor lift(const Tensor& real);
  void lift_real_tensors(ops::OpArgs& args);
  autograd::ViewHistory history_of(const Tensor& t) const;
  void check_view_rules(const ops::OpDef& op, const ops::OpArgs& args) const;
  // Binds each view made under no_grad that `op` reads with grad on to a value that requires
  // grad whose gradient is dropped (eager: no edge to it), if it is not bound so yet.
  void bind_no_grad_views(const ops::OpDef& op, const ops::OpArgs& args);
  bool is_dropped_grad_view(const Tensor& t) const;
  graph::ValueId detached_requiring_grad(graph::ValueId v);
  // t.requires_grad() as eager has it: a view past a detach() is a view of the detached tensor.
  bool eager_requires_grad(const Tensor& t) const;
  void make_interior_leaf(const Tensor& t);
  // ---- functionalized RNG (trace/random.cpp) ----
  // The functional (seed, offset) form of an eager random row (rand, randn, native_dropout in
  // training), recorded; nullopt for a call that draws nothing or a random row it does not know
  // (recorded as is: Recompute::random keeps the partitioner from replaying it).
  std::optional<std::vector<Tensor>> functionalize_random(const ops::OpDef& op, ops::OpArgs& args);
  // Reserves `blocks` Philox blocks of this call's stream and returns where they start; creates
  // the fw_rng_seed() / fw_rng_offset(N) inputs on first use and keeps N the running total.
  int64_t take_rng_blocks(int64_t blocks);
  // An effectful call recorded as aotgrad.with_effects, threaded through the effect token (the
  // graph input fw_token(0), created on first use); returns the op's results.
  std::vector<Tensor> thread_effect(const ops::OpDef& op, ops::OpArgs& args);
  bool is_eager_leaf(graph::ValueId v, const TensorState* ts) const;
  void check_inner_grad_node(size_t node) const;
  Tensor output_gradient(const Tensor& output, const Tensor& given, size_t i);

  graph::Graph& graph_;
  std::vector<double> node_budgets_;  // by node index; may stop short of the last nodes
  std::vector<bool> requires_grad_;   // by value index
  std::vector<StorageState> storages_;
  bool reads_input_offsets_ = false;  // set by check_as_strided, as_strided_needs_rebase
  std::vector<TensorState> tensors_;
  std::vector<bool> input_is_leaf_requiring_grad_;
  std::vector<bool> input_is_leaf_;
  std::vector<SavedUse> saved_uses_;
  std::map<const TensorImpl*, Lifted> lifted_;
  std::vector<RequiresGradChange> input_requires_grad_changes_;
  std::vector<InteriorLeaf> interior_leaves_;
  std::vector<bool> freed_nodes_;
  struct Touch {
    const TensorImpl* tensor;  // alive while tracing: the state it took holds it (`keep`)
    bool grad_on;
    size_t storage;
    Geometry after;  // the tensor's geometry after the op
  };
  std::vector<Touch> metadata_touches_;
  // A touched tensor, or an input leaf requiring grad, read by an op with a VJP with grad on, and
  // its sizes then: each pair once.
  std::vector<std::pair<const TensorImpl*, IntList>> grad_reads_;
  std::vector<const TensorImpl*> leaf_inputs_requiring_grad_;  // their fakes (add_input)
  std::vector<graph::ValueId> leaf_input_values_;              // and their graph inputs
  // The arguments of aotgrad.geometry_update(old, updated): fit=False where `old` is an input
  // leaf's, whose AccumulateGrad takes the gradient of the new sizes (the runtime makes it so).
  ops::OpArgs geometry_update_args(graph::ValueId old, const Tensor& updated);
  void note_grad_reads(const ops::OpDef& op, const ops::OpArgs& args);
  std::vector<std::pair<const TensorImpl*, bool>> caller_views_;      // (user input, eager view)
  // Whether the caller's tensor a user input's fake `t` stands for is a view in eager
  // (note_caller_view; the last note wins); nullopt for any other tensor.
  std::optional<bool> caller_view(const TensorImpl* t) const;
  struct CallerCreation {
    const TensorImpl* fake = nullptr;
    autograd::SpecialCreation creation;
    uint64_t version_at_call = 0;  // the fake's
  };
  std::vector<CallerCreation> caller_creations_;  // note_caller_creation
  // `t`'s note when `t` is a noted fake (as the caller passed it: no view of it); else null.
  const CallerCreation* caller_creation(const Tensor& t) const;
  // Whether eager would find the caller's view behind `c` written since it was made: before the
  // call, or inside it, through the fake's storage or another input of its caller storage.
  bool written_since_creation(const CallerCreation& c, const Tensor& fake) const;
  std::map<size_t, size_t> caller_base_of_storage_;  // note_caller_base, by storage
  std::map<size_t, size_t> shared_storage_group_;    // note_shared_storage, by storage
  // Throws when storage `storage` (an input's), read in place, shares the caller's storage with
  // another input the function wrote.
  void check_read_in_place_after_shared_write(size_t storage) const;
  // The storages that share `storage`'s caller storage through graph inputs of their own
  // (note_shared_storage), `storage` left out.
  std::vector<size_t> sharing_storage(size_t storage) const;
  // Writes so far to those storages (the sum of their generations); 0 where there are none.
  uint64_t shared_writes(size_t storage) const;
  // Throws when `ts` reads past its input (TensorState::reads_past_input) and another input of
  // its caller storage was written since it was made.
  void check_shared_write_since_read(const TensorState& ts) const;
  std::set<size_t> caller_bases_with_history_;       // written through with grad on
  bool caller_base_has_history(size_t storage) const;
  // A tensor that eager has as a view of a caller's _base given a history during the call, whose
  // value does not require grad (bind_no_grad_views binds it as it binds a view made under
  // no_grad).
  bool is_view_of_a_caller_base_given_a_history(const Tensor& t) const;
  // By metadata-touched tensor: its geometry at the last visible write to its storage made
  // after it was touched (geometry_at_last_visible_write),
  // and how many entries metadata_touches_ had then.
  struct VisibleWrite {
    Geometry geometry;
    size_t touches = 0;
  };
  std::map<const TensorImpl*, VisibleWrite> last_visible_writes_;
  std::vector<GeometryRun> metadata_runs_in(const Tensor& t, size_t first_touch,
                                            size_t end_touch) const;
  // By aotgrad.geometry_update result: the value whose node eager's tensor still has (changed
  // again under no_grad, the gradient is fitted to that value's shape once, not step by step).
  std::map<uint32_t, graph::ValueId> geometry_origins_;
  // By tensor changed in place under no_grad: the value whose node eager's tensor has, and its
  // storage, until a write with grad on to that storage or a change with grad on gives it
  // another node.
  struct NoGradOrigin {
    graph::ValueId value;
    size_t storage;
  };
  std::map<const TensorImpl*, NoGradOrigin> no_grad_origins_;
  // By ViewStep::geometry: the value whose node eager's tensor kept, which replays of the step
  // pass the gradient of its result to (aotgrad.geometry_update).
  std::vector<graph::ValueId> geometry_updates_;
  void regenerate_views_of_changed_geometry(size_t updated, size_t mark = SIZE_MAX);
  // The live views of `updated`'s storage made before it (plain ones: grad mode on, no detach(),
  // no multi-output op) whose history eager regenerates at their next use.
  std::vector<size_t> views_made_before(size_t updated) const;
  // Input storages whose geometry changed under no_grad (the input no view in eager) while views
  // made before the change were live, by storage: the input's index. A write with grad on to one
  // is refused (functionalize_inplace): eager's CopySlices of such a view passes the unwritten
  // part of the gradient to the input's node in the new geometry as it is.
  std::map<size_t, int> inputs_changed_under_views_;
  // By tensor state: views of an input made before its sizes changed under no_grad (the input's
  // node requiring grad), whose use is refused with this text (value_of).
  std::map<size_t, std::string> stale_input_views_;
  std::vector<size_t> metadata_touched_storages_;
  std::vector<BackwardError> backward_errors_;
  // By detach() call (ViewStep::detached): the value holding the history writes made through
  // that alias with grad on gave it; invalid while it has none.
  std::vector<graph::ValueId> detached_histories_;
  Tensor rng_seed_, rng_offset_;  // fakes of the RNG inputs, once a random op was traced
  size_t rng_offset_input_ = 0;   // graph input position of rng_offset_
  int64_t rng_blocks_ = 0;        // Philox blocks the traced call draws so far
  Tensor token_;                  // the current effect token, once an effectful op was traced
};

}  // namespace aotgrad::trace
