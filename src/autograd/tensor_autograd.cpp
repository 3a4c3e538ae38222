// The autograd half of Tensor's methods.
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "autograd/engine.h"
#include "autograd/nodes.h"
#include "autograd/traced.h"

namespace aotgrad {

// As PyTorch: a view requires grad when its base does, even one made under no_grad (which then
// is a leaf whose gradient goes nowhere; see autograd/view_creation.h).
bool Tensor::requires_grad() const {
  if (!impl_) return false;
  if (impl_->autograd && impl_->autograd->requires_grad) return true;
  const TensorImpl* base = impl_->base.get();
  if (!base) return false;
  // A traced view: its tracer knows eager's base (user code inside a compiled function that asks
  // x.detach().select(0, 0).requires_grad() gets eager's false).
  if (impl_->trace.owner)
    if (autograd::TracedAutograd* traced = autograd::traced_autograd_for(*this))
      return traced->base_requires_grad(*this);
  return base->autograd && base->autograd->requires_grad;
}

Tensor& Tensor::requires_grad_(bool flag) {
  if (!impl_) throw std::invalid_argument("requires_grad_ on an undefined Tensor");
  if (flag && !is_floating(dtype()))
    throw std::invalid_argument("only floating point tensors can require gradients (got " +
                                std::string(dtype_name(dtype())) + ")");
  if (autograd::TracedAutograd* traced = autograd::traced_autograd_for(*this)) {
    traced->set_requires_grad(*this, flag);  // raises eager's errors for the traced value
  } else if (!is_leaf()) {
    if (!flag)
      throw std::invalid_argument(
          "you can only change requires_grad flags of leaf variables. If you want to use a "
          "computed variable in a subgraph that doesn't require differentiation use var_no_grad "
          "= var.detach().");
    return *this;  // a non-leaf already requires grad
  }
  impl_->autograd_meta().requires_grad = flag;
  return *this;
}

Tensor Tensor::grad() const {
  return impl_ && impl_->autograd ? impl_->autograd->grad : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  if (g.defined() && g.sizes() != sizes())
    throw std::invalid_argument("set_grad: gradient of shape " + shape_to_string(g.sizes()) +
                                " for a tensor of shape " + shape_to_string(sizes()));
  impl_->autograd_meta().grad = g;
}

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  autograd::adopt_base_history(*this);
  // An accessor: unlike PyTorch's grad_fn getter it never raises. A special view whose storage
  // was written since raises when autograd uses its history (gradient_edge).
  return impl_ && impl_->autograd ? impl_->autograd->grad_fn : none;
}

bool Tensor::is_leaf() const {
  return !grad_fn();
}

void Tensor::retain_grad() const {
  if (!requires_grad())
    throw std::invalid_argument("retain_grad() on a tensor that does not require grad");
  if (is_leaf()) return;
  AutogradMeta& m = impl_->autograd_meta();
  if (m.retains_grad) return;
  m.retains_grad = true;
  m.grad_fn->retained_grads.emplace_back(m.output_nr, impl_);
}

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph,
                      bool create_graph) const {
  autograd::backward_of(std::span<const Tensor>(this, 1),
                        std::span<const Tensor>(&gradient, gradient.defined() ? 1 : 0),
                        retain_graph, create_graph);
}

}  // namespace aotgrad
