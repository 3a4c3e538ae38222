// The autograd node types eager mode records.
//
// OpNode: one call of an op-table row; saves exactly what the row's SaveMask names (everything
// else as metadata only) and runs the row's VJP. AccumulateGrad: the sink of a leaf.
// CopySlices: an in-place op applied to a view; routes the base's gradient through the op's VJP
// for the viewed region (with recorded ops under create_graph, so it differentiates twice).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aotgrad/autograd.h"
#include "autograd/view_creation.h"
#include "ops/op.h"

namespace aotgrad::autograd {

// A tensor kept for backward: a detached alias plus the storage version at save time.
struct SavedTensor {
  Tensor data;
  uint64_t version = 0;
  bool saved = false;  // false: metadata only

  static SavedTensor save(const Tensor& t, bool keep_data);
};

// `data` (a saved, detached alias) as a backward with create_graph=true must see it: with the
// history the saved tensor had, so that ops on it in a VJP reach the graph again. A leaf that is
// still alive is returned itself (as PyTorch unpacks a saved leaf). Without grad mode, or with no
// history (a null edge), `data` itself.
Tensor with_history(const Tensor& data, const Edge& history);

// Raises `message` when a gradient reaches it: the grad_fn of results a node computed without
// recording (double_backward_error), so a second derivative through them is an error.
class DelayedError : public Node {
 public:
  explicit DelayedError(std::string message) : message_(std::move(message)) {}
  std::string name() const override { return "DelayedError"; }
  std::vector<Tensor> apply(std::vector<Tensor>&&) override;
  uint32_t num_outputs() const override { return static_cast<uint32_t>(output_sizes.size()); }
  std::string double_backward_error() const override { return message_; }

 private:
  std::string message_;
};

// While one is alive on this thread, the eager interpreter notes the first op it runs with grad
// mode on that has no VJP, although it takes a floating tensor that requires grad and returns a
// floating tensor (a *_backward row without a derivative, called by a VJP under create_graph):
// autograd would silently treat its result as a constant.
class UndifferentiableOpWatch {
 public:
  UndifferentiableOpWatch();
  ~UndifferentiableOpWatch();
  UndifferentiableOpWatch(const UndifferentiableOpWatch&) = delete;
  UndifferentiableOpWatch& operator=(const UndifferentiableOpWatch&) = delete;
  // The first such op's name, or empty.
  const std::string& first() const { return first_; }
  // Called by the eager interpreter.
  static void note(const ops::OpDef& op, const std::vector<Tensor>& inputs,
                   const std::vector<Tensor>& outputs);

 private:
  std::string first_;
  UndifferentiableOpWatch* prev_;
};

class OpNode : public Node {
 public:
  OpNode(const ops::OpDef& op, const ops::OpArgs& args, const std::vector<Tensor>& outputs,
         std::vector<bool> needs_grad);
  std::string name() const override;
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  void release_saved() override;
  uint32_t num_outputs() const override { return static_cast<uint32_t>(output_sizes.size()); }
  std::string double_backward_error() const override;

  // Set when this node is a view's history: the storage's version at that moment. A write to
  // the storage through any other alias makes the history stale (see gradient_edge).
  std::optional<uint64_t> view_version;

  // Whether an in-place row saves the argument it writes (mul_.Tensor, for other's gradient)
  // when the gradients `needs_grad` says are wanted: that is its value from before the write,
  // which the caller clones before the kernel runs and passes in its place (PyTorch's
  // original_self). Its history, for a create_graph backward, is then the old one.
  static bool saves_written_input(const ops::OpDef& op, const ops::OpArgs& args,
                                  const std::vector<bool>& needs_grad);

 private:
  static uint32_t wanted_args(const ops::OpArgs& args, const std::vector<bool>& needs_grad);
  // args_ with each saved tensor given its history (with_history), for a create_graph backward.
  ops::OpArgs args_with_history();

  const ops::OpDef& op_;
  ops::OpArgs args_;                     // tensor args replaced by their saved forms
  std::vector<SavedTensor> saved_args_;  // parallel to args_ (unused slots stay empty)
  std::vector<SavedTensor> outputs_;
  std::vector<bool> needs_grad_;
  uint32_t saved_inputs_ = 0;  // the inputs saved with their data: op_.saves.inputs_for(wanted)
  bool holds_data_ = false;    // some input or output is saved with its data
  bool released_ = false;
};

class AccumulateGrad : public Node {
 public:
  // `sizes`: the leaf's when the accumulator is made (gradient_edge), which the engine fits every
  // gradient to. Kept in the node up to rank 6, so the per-call path allocates nothing for them.
  AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf, const IntList& sizes);
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::shared_ptr<TensorImpl> leaf() const { return leaf_.lock(); }
  std::string double_backward_error() const override { return {}; }
  bool fitted_sizes(uint32_t slot, std::span<const int64_t>& sizes) const override;

 private:
  std::weak_ptr<TensorImpl> leaf_;
  size_t rank_;
  std::array<int64_t, 6> inline_sizes_;
  IntList heap_sizes_;
};

class CopySlices : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn);
  std::string name() const override { return "CopySlices"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  void release_saved() override { fn_->release_saved(); }
  // Differentiable when the in-place op's node is: apply records under create_graph.
  std::string double_backward_error() const override;

 private:
  std::vector<Tensor> apply_recorded(const Tensor& g);
  void check_overlap(bool view) const;

  IntList base_sizes_, base_strides_;
  int64_t base_offset_;
  IntList view_sizes_, view_strides_;
  int64_t view_offset_;
  std::shared_ptr<Node> fn_;
};

// The edge a gradient for `t` flows into: its grad_fn, or its leaf accumulator. Null node when
// `t` does not require grad. A view whose storage was written through another alias since its
// history was recorded first gets a fresh history, as_strided of its base's current one (as
// PyTorch regenerates a view's grad_fn when the base's version moved on).
Edge gradient_edge(const Tensor& t);
// The same, except that a leaf accumulator this call makes records `accumulator_sizes` (when not
// null) instead of the leaf's sizes now: a compiled function's call stands for eager ops that
// made it after the leaf's sizes changed in place under no_grad (AutogradBody).
Edge gradient_edge(const Tensor& t, const IntList* accumulator_sizes);

// A tensor over `t`'s storage with `t`'s geometry, and no autograd history or _base.
Tensor detached_alias(const Tensor& t);

// Makes `view`'s history as_strided of its _base's current history: after an in-place op on the
// view (CopySlices), or when the storage was written through another alias since the view's
// history was recorded.
void rebase_view_history(const Tensor& view);

// Gives a view made normally while its base had no history (v = b.unsqueeze(1), then b.mul_(w))
// the base's new history, as PyTorch's grad_fn getter does; nothing for any other tensor.
// Tensor::grad_fn and gradient_edge call it, so is_leaf() does not depend on whether autograd
// has used the view yet.
void adopt_base_history(const Tensor& t);

// The history `t` has, as view errors name it ("Output 1 of UnbindBackward0").
ViewHistory view_history(const Tensor& t);
// Whether a gradient given to the view `t` reaches its _base: its history runs through view
// nodes back to the _base's own. False for a view with no history (made under no_grad), and for
// one made with grad on of a view made under no_grad (a piece of it): that chain ends in the
// no_grad view's empty edge. A stale history counts as reaching (it is regenerated from the
// _base). True for a tensor that is no view.
bool history_reaches_base(const Tensor& t);
// The same walk from a view's history node `node` (null: no history), staleness aside: whether
// its chain of view nodes ends at a node that is no view's history rather than at an empty edge.
bool view_nodes_reach_base(std::shared_ptr<Node> node);

// Makes `t`'s history (grad_fn, output_nr) point at `node` output `output_nr`.
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr);

uint64_t next_sequence_nr();

}  // namespace aotgrad::autograd
