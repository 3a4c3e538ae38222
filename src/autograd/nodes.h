// The autograd node types eager mode records.
//
// OpNode: one call of an op-table row; saves exactly what the row's SaveMask names (everything
// else as metadata only) and runs the row's VJP. AccumulateGrad: the sink of a leaf.
// CopySlices: an in-place op applied to a view; routes the base's gradient through the op's VJP
// for the viewed region.
#pragma once

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

class OpNode : public Node {
 public:
  OpNode(const ops::OpDef& op, const ops::OpArgs& args, const std::vector<Tensor>& outputs,
         std::vector<bool> needs_grad);
  std::string name() const override;
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  void release_saved() override;
  uint32_t num_outputs() const override { return static_cast<uint32_t>(output_sizes.size()); }

  // Set when this node is a view's history: the storage's version at that moment. A write to
  // the storage through any other alias makes the history stale (see gradient_edge).
  std::optional<uint64_t> view_version;

 private:
  const ops::OpDef& op_;
  ops::OpArgs args_;                     // tensor args replaced by their saved forms
  std::vector<SavedTensor> saved_args_;  // parallel to args_ (unused slots stay empty)
  std::vector<SavedTensor> outputs_;
  std::vector<bool> needs_grad_;
  bool holds_data_ = false;  // some input or output is saved with its data
  bool released_ = false;
};

class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf) : leaf_(leaf) {}
  std::string name() const override { return "AccumulateGrad"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  std::shared_ptr<TensorImpl> leaf() const { return leaf_.lock(); }

 private:
  std::weak_ptr<TensorImpl> leaf_;
};

class CopySlices : public Node {
 public:
  CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn);
  std::string name() const override { return "CopySlices"; }
  std::vector<Tensor> apply(std::vector<Tensor>&& grad_outputs) override;
  void release_saved() override { fn_->release_saved(); }

 private:
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

// A tensor over `t`'s storage with `t`'s geometry, and no autograd history or _base.
Tensor detached_alias(const Tensor& t);

// Makes `view`'s history as_strided of its _base's current history: after an in-place op on the
// view (CopySlices), or when the storage was written through another alias since the view's
// history was recorded.
void rebase_view_history(const Tensor& view);

// The history `t` has, as view errors name it ("Output 1 of UnbindBackward0").
ViewHistory view_history(const Tensor& t);

// Makes `t`'s history (grad_fn, output_nr) point at `node` output `output_nr`.
void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr);

uint64_t next_sequence_nr();

}  // namespace aotgrad::autograd
