// The Trace interpreter: records every op call into a Graph instead of running it.
//
// Reading guide: inputs are fake tensors (metadata, no memory) bound to graph values through
// TensorImpl::trace. call() turns the OpArgs into node arguments, asks the row's meta function
// for the result metadata, appends a Node, and returns fake results bound to its outputs. View
// results share their input's fake storage, so aliasing stays visible to the caller. In-place ops
// on a fresh intermediate are recorded as their functional variant and the tensor is rebound to
// the new value; in-place ops on inputs or on aliased tensors are rejected (they need full
// functionalization). Thread-safety: one tracer per thread, used while pushed.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "ops/op.h"

namespace aotgrad::trace {

class Tracer final : public ops::Interpreter {
 public:
  explicit Tracer(graph::Graph& graph) : graph_(graph) {}

  std::string_view name() const override { return "Trace"; }
  std::vector<Tensor> call(const ops::OpDef& op, ops::OpArgs& args) override;

  // A fake tensor standing for a new graph input with `example`'s metadata and requires_grad.
  Tensor add_input(const Tensor& example, std::string_view name_hint, std::string desc = "");
  // A fake tensor bound to an existing value of the graph.
  Tensor bind(graph::ValueId v, bool requires_grad);
  // The value a tensor produced under this tracer stands for; throws naming `what` otherwise.
  graph::ValueId value_of(const Tensor& t, const std::string& what) const;
  bool traced_here(const Tensor& t) const { return t.defined() && t.impl()->trace.owner == this; }
  // Whether autograd would track the value (grad mode on and it depends on an input that
  // requires grad through differentiable ops).
  bool requires_grad(graph::ValueId v) const;

  graph::Graph& graph() { return graph_; }

 private:
  graph::NodeArg to_node_arg(const ops::OpDef& op, const ops::Arg& a, size_t index) const;
  std::vector<Tensor> record(const ops::OpDef& op, ops::OpArgs& args);
  std::vector<Tensor> record_inplace(const ops::OpDef& op, ops::OpArgs& args);
  void set_requires_grad(graph::ValueId v, bool r);

  graph::Graph& graph_;
  std::vector<bool> requires_grad_;  // by value index
  std::vector<std::shared_ptr<Storage>> input_storages_;
};

// Thrown when a traced function does something aot_function does not support yet; the message
// names the case. Distinct so callers can tell "unsupported" from "your function is wrong".
struct UnsupportedError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace aotgrad::trace
