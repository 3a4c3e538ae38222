// Eager autograd: graph nodes, grad mode, backward() and grad().
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::autograd {

struct Edge {
  std::shared_ptr<Node> node;  // null: the input needs no gradient
  uint32_t input_nr = 0;       // which input slot of `node` receives the gradient
};

// One recorded operation. apply() maps gradients of its outputs to gradients of its inputs, in
// the order of next_edges. An undefined Tensor means "zero".
class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  virtual std::string name() const = 0;
  virtual std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) = 0;
  // Frees saved tensors after a backward pass that did not retain the graph.
  virtual void release_saved() {}
  virtual uint32_t num_outputs() const { return 1; }
  // false: apply() takes undefined tensors for outputs no gradient reached, instead of zeros (a
  // custom Function after set_materialize_grads(false)).
  virtual bool materializes_grads() const { return true; }
  // Empty when apply(), run with grad mode on (a backward with create_graph=true), records its
  // computation so that its results can be differentiated again. Otherwise the one-line reason
  // it cannot: the engine then runs apply() under NoGradGuard and gives its results a node that
  // raises this reason if a gradient ever flows through them (as PyTorch's DelayedError), so a
  // second derivative through this node is an error, never a silent zero.
  virtual std::string double_backward_error() const;
  // The sizes the engine fits a gradient reaching output `slot` to (PyTorch's input metadata:
  // taken when equal, summed when they broadcast to the gradient's, refused otherwise); false
  // when it fits none. By default output_sizes[slot].
  virtual bool fitted_sizes(uint32_t slot, std::span<const int64_t>& sizes) const;

  std::vector<Edge> next_edges;
  // Metadata of each output, used to materialise a zero gradient where none flowed.
  std::vector<IntList> output_sizes;
  std::vector<DType> output_dtypes;
  // Later nodes run first when several are ready, as in PyTorch's engine.
  uint64_t sequence_nr;
  // Non-leaf tensors that asked for retain_grad(): (output slot, tensor).
  std::vector<std::pair<uint32_t, std::weak_ptr<TensorImpl>>> retained_grads;
};

bool grad_mode_enabled();

class NoGradGuard {
 public:
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

class EnableGradGuard {
 public:
  EnableGradGuard();
  ~EnableGradGuard();
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool prev_;
};

// Accumulates d(outputs)/d(leaves) into leaves' .grad(). `grad_outputs` may be empty for scalar
// outputs (ones are used). As LibTorch: retain_graph defaults to create_graph; create_graph=true
// records the backward pass itself, so the gradients (and .grad() of leaves, which then has a
// grad_fn) can be differentiated again: a gradient penalty, a Hessian-vector product.
void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false);

// Returns d(outputs)/d(inputs) without touching .grad(). An input unreachable from outputs gets an
// undefined Tensor when allow_unused, otherwise an error naming it. LibTorch's signature and
// defaults; with create_graph=true the results carry history (see backward).
std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs = {},
                         std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
                         bool allow_unused = false);

}  // namespace aotgrad::autograd

namespace aotgrad {
using autograd::EnableGradGuard;
using autograd::NoGradGuard;
}  // namespace aotgrad
