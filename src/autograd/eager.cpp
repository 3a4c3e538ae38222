// The Eager interpreter (bottom of every interpreter stack) and the dispatch entry points.
//
// Eager runs the row's kernel, bumps version counters of written arguments, and, when grad mode
// is on and a differentiable input requires grad, records an OpNode (or CopySlices for an
// in-place op on a view) so backward() can reach the inputs.
#include <stdexcept>
#include <string>

#include "autograd/nodes.h"
#include "autograd/traced.h"
#include "autograd/view_creation.h"
#include "kernels/copy.h"
#include "ops/inplace_view.h"
#include "ops/op.h"
#include "ops/requires_grad.h"
#include "tensor/current_op.h"
#include "tensor/small_object_pool.h"

namespace aotgrad::ops {
namespace {

thread_local std::vector<Interpreter*> t_stack;

}  // namespace

std::vector<Tensor> dispatch(const OpDef& op, OpArgs args) {
  CurrentOpScope scope(op.name);  // errors from allocation and size checks name the op
  normalize(op, args);
  Interpreter& top = t_stack.empty() ? eager_interpreter() : *t_stack.back();
  return top.call(op, args);
}

std::vector<Tensor> dispatch_below(const Interpreter& self, const OpDef& op, OpArgs args) {
  for (size_t i = t_stack.size(); i-- > 0;)
    if (t_stack[i] == &self) return (i == 0 ? eager_interpreter() : *t_stack[i - 1]).call(op, args);
  throw std::logic_error("dispatch_below: interpreter " + std::string(self.name()) +
                         " is not on the stack");
}

InterpreterGuard::InterpreterGuard(Interpreter& interp) {
  t_stack.push_back(&interp);
}
InterpreterGuard::~InterpreterGuard() {
  t_stack.pop_back();
}

}  // namespace aotgrad::ops

namespace aotgrad::autograd {

TracedAutograd* traced_autograd_for(const Tensor& t) {
  if (!t.defined() || !t.impl()->trace.owner) return nullptr;
  for (size_t i = ops::t_stack.size(); i-- > 0;)
    if (auto* traced = dynamic_cast<TracedAutograd*>(ops::t_stack[i]); traced && traced->owns(t))
      return traced;
  return nullptr;
}

bool interpreter_stack_empty() {
  return ops::t_stack.empty();
}

}  // namespace aotgrad::autograd

namespace aotgrad::autograd {
namespace {

using ops::OpArgs;
using ops::OpDef;

// Flattens the differentiable tensor inputs (Tensor args and Tensor[] elements) in arg order.
std::vector<Tensor> flat_tensor_inputs(const OpArgs& args) {
  std::vector<Tensor> flat;
  for (const ops::Arg& a : args) {
    if (auto* t = std::get_if<Tensor>(&a))
      flat.push_back(*t);
    else if (auto* l = std::get_if<ops::TensorList>(&a))
      flat.insert(flat.end(), l->begin(), l->end());
  }
  return flat;
}

bool requires_grad(const Tensor& t) {
  return t.defined() && t.requires_grad();
}

// PyTorch's check_inplace: a special view (view_creation.h) first, then a leaf that requires
// grad, or a view of a leaf. Only when autograd would record the op.
void check_inplace_allowed(const OpDef& op, const Tensor& self, bool any_requires_grad) {
  if (!grad_mode_enabled() || !any_requires_grad) return;
  if (self.is_view()) {
    check_view_creation(self, view_history(self), /*indirect=*/false);
    // PyTorch tests only base.is_leaf(); a view with history over a leaf base that needs no grad
    // (a compiled function's output viewing the backend's buffer) is no leaf's view, though.
    Tensor base = self._base();
    if (self.requires_grad() && base.is_leaf() && (base.requires_grad() || self.is_leaf()))
      throw std::runtime_error(
          "a view of a leaf Variable that requires grad is being used in an "
          "in-place operation (" +
          std::string(op.name) + "). Clone the leaf first, or update it under NoGradGuard.");
  }
  if (self.requires_grad() && self.is_leaf())
    throw std::runtime_error(
        "a leaf Variable that requires grad is being used in an in-place "
        "operation (" +
        std::string(op.name) + "). Wrap the update in NoGradGuard, or clone() the tensor first.");
}

class EagerInterpreter final : public ops::Interpreter {
 public:
  std::string_view name() const override { return "Eager"; }

  std::vector<Tensor> call(const OpDef& op, OpArgs& args) override {
    for (const ops::Arg& a : args)
      if (auto* t = std::get_if<Tensor>(&a); t && t->defined() && t->is_fake())
        throw std::logic_error(std::string(op.name) +
                               ": a fake tensor reached the eager interpreter; a traced value was "
                               "used outside the trace that made it");
    int written = op.mutated_arg();
    Tensor self = written >= 0 ? ops::tensor_arg(args, written) : Tensor();
    std::vector<Tensor> flat = flat_tensor_inputs(args);
    if (written >= 0) {
      bool any_requires_grad = false;
      for (const Tensor& t : flat) any_requires_grad = any_requires_grad || requires_grad(t);
      check_inplace_allowed(op, self, any_requires_grad);
    }
    // History edges must be taken before the kernel runs: an in-place op replaces self's.
    std::vector<Edge> edges;
    std::vector<bool> needs;
    bool any = false;
    if (op.vjp && grad_mode_enabled()) {
      for (const Tensor& t : flat) {
        bool r = requires_grad(t);
        any = any || r;
        edges.push_back(r ? gradient_edge(t) : Edge{});
        // PyTorch's should_compute_output: a gradient is wanted where the edge leads somewhere.
        // A view made under no_grad requires grad but has none, so nothing is saved for it.
        needs.push_back(edges.back().node != nullptr);
      }
    }
    // t_, as_strided_, ...: the kernel rewrites self's geometry, which their VJP still needs.
    bool metadata_only = any && ops::mutates_metadata_only(op);
    OpArgs saved_args = metadata_only ? args : OpArgs();
    if (metadata_only) saved_args[written] = detached_alias(self);
    // A row whose gradient reads what it overwrites saves a copy from before the write.
    const bool save_before_write = any && OpNode::saves_written_input(op, args, needs);
    if (save_before_write) {
      Tensor before = make_tensor(self.sizes(), self.dtype());
      kernels::copy_into(before, self);
      saved_args = args;
      saved_args[written] = before;
    }
    std::vector<Tensor> outputs = op.kernel(args);
    if (!op.vjp) UndifferentiableOpWatch::note(op, flat, outputs);
    if (written >= 0) self.storage()->bump_version();
    if (op.is_view()) {
      const Tensor& viewed = ops::tensor_arg(args, op.view_of_arg());
      bool multi = returns_multiple_views(op);
      for (const Tensor& out : outputs)
        if (out.is_view()) record_view_creation(out, viewed, multi);
    }
    if (!any) return outputs;

    auto node = std::allocate_shared<OpNode>(PoolAllocator<OpNode>(), op,
                                             metadata_only || save_before_write ? saved_args : args,
                                             outputs, needs);
    node->next_edges = std::move(edges);
    // A view whose geometry changed keeps its data: its base's history is untouched.
    if (written >= 0 && self.is_view() && !metadata_only) {
      // The base's history now runs through the op for the viewed region.
      Tensor base = self._base();
      auto copy_slices = std::make_shared<CopySlices>(base, self, node);
      copy_slices->next_edges.push_back(gradient_edge(base));
      for (size_t i = 1; i < node->next_edges.size(); ++i)
        copy_slices->next_edges.push_back(node->next_edges[i]);
      set_history(base, copy_slices, 0);
      rebase_view_history(self);
      return outputs;
    }
    for (size_t i = 0; i < outputs.size(); ++i)
      if (ops::result_requires_grad(op, grad_mode_enabled(), any, outputs[i].dtype()))
        set_history(outputs[i], node, static_cast<uint32_t>(i));
    return outputs;
  }
};

}  // namespace
}  // namespace aotgrad::autograd

namespace aotgrad::ops {
Interpreter& eager_interpreter() {
  thread_local autograd::EagerInterpreter eager;
  return eager;
}
}  // namespace aotgrad::ops
