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
// Thread-safety: one tracer per thread, used while pushed.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op.h"
#include "trace/functionalize.h"

namespace aotgrad::trace {

class Tracer final : public ops::Interpreter {
 public:
  explicit Tracer(graph::Graph& graph) : graph_(graph) {}

  std::string_view name() const override { return "Trace"; }
  std::vector<Tensor> call(const ops::OpDef& op, ops::OpArgs& args) override;

  // A fake tensor standing for a new graph input (the root of its own storage) with `example`'s
  // metadata and requires_grad.
  Tensor add_input(const Tensor& example, std::string_view name_hint, std::string desc = "");
  // A fake view of `base` (a tracked tensor) with the given geometry, recorded as as_strided.
  Tensor add_strided_view(const Tensor& base, const IntList& sizes, const IntList& strides,
                          int64_t storage_offset, bool requires_grad);
  // An untracked fake tensor bound to an existing value of the graph.
  Tensor bind(graph::ValueId v, bool requires_grad);
  // The value a traced tensor currently stands for (regenerated first if stale); throws naming
  // `what` when `t` was not produced under this tracer.
  graph::ValueId value_of(const Tensor& t, const std::string& what);
  bool traced_here(const Tensor& t) const { return t.defined() && t.impl()->trace.owner == this; }
  // Whether autograd would track the value.
  bool requires_grad(graph::ValueId v) const;

  const std::vector<StorageState>& storages() const { return storages_; }
  // The functionalization record of a traced tensor, or null for untracked ones.
  const TensorState* state_of(const Tensor& t) const;
  // Whether a metadata-mutating op (t_, as_strided_, ...) was applied to `t` (even one that
  // left its geometry as it was: eager still bumps the version counter), and whether one ran with
  // grad mode on (the runtime then replays the change where autograd sees it).
  struct MetadataTouch {
    bool touched = false;
    bool under_grad = false;
  };
  MetadataTouch metadata_touch(const Tensor& t) const;
  // Messages of eager version-counter errors a backward through this trace would raise.
  const std::vector<std::string>& backward_errors() const { return backward_errors_; }
  // The MemoryBudgetGuard budget (include/aotgrad/memory_budget.h) live when each node of the
  // graph was recorded, by node index; NaN where no guard was alive (the min-cut partitioner
  // reads them as JointInfo::node_budgets).
  std::vector<double> node_budgets() const;
  graph::Graph& graph() { return graph_; }

 private:
  struct SavedUse {
    size_t storage;
    uint64_t generation;
    std::string what;  // "input 0 of aten.mul.Tensor"
  };

  graph::NodeArg to_node_arg(const ops::OpDef& op, const ops::Arg& a, size_t index);
  std::vector<Tensor> record(const ops::OpDef& op, ops::OpArgs& args, bool track);
  std::vector<Tensor> functionalize_inplace(const ops::OpDef& op, ops::OpArgs& args);
  std::vector<Tensor> functionalize_metadata(const ops::OpDef& op, ops::OpArgs& args);
  Tensor scatter_into_root(size_t state_index, const Tensor& updated);
  void note_saved_modified(const ops::OpDef& op, size_t storage);
  void check_as_strided(const ops::OpDef& op, size_t storage, bool writing) const;
  Tensor replay(const StorageState& s, const std::vector<ViewStep>& chain, size_t steps);
  void sync(const Tensor& t);
  void sync_args(ops::OpArgs& args);
  void track_root(const Tensor& t, int input_index);
  void track_view(const Tensor& view, const Tensor& parent, ViewStep step);
  void note_saved(const ops::OpDef& op, const ops::OpArgs& args, const std::vector<Tensor>& outs);
  void check_leaf_mutation(const ops::OpDef& op, const TensorState& ts, bool hidden) const;
  void set_requires_grad(graph::ValueId v, bool r);

  graph::Graph& graph_;
  std::vector<double> node_budgets_;  // by node index; may stop short of the last nodes
  std::vector<bool> requires_grad_;  // by value index
  std::vector<StorageState> storages_;
  std::vector<TensorState> tensors_;
  std::vector<bool> input_is_leaf_requiring_grad_;
  std::vector<SavedUse> saved_uses_;
  std::vector<std::pair<const TensorImpl*, bool>> metadata_touches_;  // (tensor, grad mode on)
  std::vector<std::string> backward_errors_;
};

}  // namespace aotgrad::trace
