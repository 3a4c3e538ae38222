// Autograd on traced tensors.
//
// The Trace interpreter's fake tensors carry no autograd history (no grad_fn, no nodes): the
// tracer keeps, per graph value, whether autograd would track it. So that a traced function may
// call autograd::grad, backward or Tensor::requires_grad_ (PyTorch traces autograd.grad into the
// forward graph), these hand a tensor that an interpreter on the stack owns to that interpreter.
#pragma once

#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::autograd {

class TracedAutograd {
 public:
  virtual ~TracedAutograd() = default;
  virtual bool owns(const Tensor& t) const = 0;
  // As autograd::grad, recording the gradient's ops into the trace.
  virtual std::vector<Tensor> grad(const std::vector<Tensor>& outputs,
                                   const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                   bool allow_unused) = 0;
  // As autograd::backward (a traced function cannot accumulate into .grad(): it throws).
  virtual void backward(const std::vector<Tensor>& outputs) = 0;
  // Called by Tensor::requires_grad_ after eager's own checks, before the flag changes.
  virtual void set_requires_grad(const Tensor& t, bool flag) = 0;
  // Tensor::requires_grad of a traced view with no flag of its own: whether eager's base of it
  // requires grad (the fake's _base is the root of its storage, which a detach() between them,
  // or a write since, makes another tensor than eager's base).
  virtual bool base_requires_grad(const Tensor& t) const = 0;
};

// The innermost interpreter on this thread's stack that owns `t`, or null.
TracedAutograd* traced_autograd_for(const Tensor& t);

// Whether this thread's interpreter stack is empty: an op called now runs on real tensors in the
// eager interpreter, and no tracer sees it (so the engine may call a kernel directly).
bool interpreter_stack_empty();

}  // namespace aotgrad::autograd
