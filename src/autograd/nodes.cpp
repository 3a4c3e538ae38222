#include "autograd/nodes.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "ops/inplace_view.h"
#include "tensor/iter.h"
#include "tensor/overlap.h"
#include "tensor/small_object_pool.h"

namespace aotgrad::autograd {

uint64_t next_sequence_nr() {
  thread_local uint64_t counter = 0;
  return counter++;
}

Node::Node() : sequence_nr(next_sequence_nr()) {}

bool Node::fitted_sizes(uint32_t slot, std::span<const int64_t>& sizes) const {
  if (slot >= output_sizes.size()) return false;
  sizes = output_sizes[slot];
  return true;
}

// A node type that does not say otherwise computes its gradients outside autograd (kernels, a
// compiled program): differentiating through it again must fail, not give zero.
std::string Node::double_backward_error() const {
  return name() +
         "'s backward is not differentiable; differentiating it twice (create_graph=true) is not "
         "supported";
}

std::vector<Tensor> DelayedError::apply(std::vector<Tensor>&&) {
  throw std::runtime_error(message_);
}

namespace {

thread_local UndifferentiableOpWatch* t_watch = nullptr;

}  // namespace

UndifferentiableOpWatch::UndifferentiableOpWatch() : prev_(t_watch) {
  t_watch = this;
}
UndifferentiableOpWatch::~UndifferentiableOpWatch() {
  t_watch = prev_;
}

void UndifferentiableOpWatch::note(const ops::OpDef& op, const std::vector<Tensor>& inputs,
                                   const std::vector<Tensor>& outputs) {
  if (!t_watch || !t_watch->first_.empty() || op.vjp || !grad_mode_enabled()) return;
  // Factories (zeros_like) and random draws are constants by definition.
  if (op.recompute == ops::Recompute::factory || op.recompute == ops::Recompute::random) return;
  bool tracked_input = false, floating_output = false;
  for (const Tensor& t : inputs)
    tracked_input = tracked_input || (t.defined() && is_floating(t.dtype()) && t.requires_grad());
  for (const Tensor& t : outputs)
    floating_output = floating_output || (t.defined() && is_floating(t.dtype()));
  if (tracked_input && floating_output) t_watch->first_ = std::string(op.name);
}

namespace {

// Threads that run backward at once may share leaves (weights): creating a leaf's accumulator
// and adding into its .grad() are serialized per leaf, as in PyTorch, by a lock striped by the
// leaf's address.
std::mutex& leaf_mutex(const TensorImpl* leaf) {
  static std::array<std::mutex, 64> stripes;
  return stripes[(reinterpret_cast<uintptr_t>(leaf) / alignof(TensorImpl)) % stripes.size()];
}

// A view's history is regenerated lazily, by whichever thread first reads it after its base
// changed (adopt_base_history, a stale view's rebase in gradient_edge): those writes are
// serialized per view, as PyTorch's grad_fn getter does with its view metadata's mutex, by a lock
// striped by the view's address. Held while the base's edge is taken: bases are never views, so
// no second view lock is taken under it.
std::mutex& view_mutex(const TensorImpl* view) {
  static std::array<std::mutex, 64> stripes;
  return stripes[(reinterpret_cast<uintptr_t>(view) / alignof(TensorImpl)) % stripes.size()];
}

// A tensor with `t`'s geometry and dtype but no data: what a VJP sees for an unsaved argument.
Tensor metadata_only(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = t.dtype();
  impl->sizes = t.sizes();
  impl->strides = t.strides();
  impl->storage_offset = t.storage_offset();  // as_strided's VJP addresses the storage with it
  impl->storage = std::make_shared<Storage>(0, /*fake=*/true);
  return Tensor(std::move(impl));
}

}  // namespace

Tensor detached_alias(const Tensor& t) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = t.dtype();
  impl->sizes = t.sizes();
  impl->strides = t.strides();
  impl->storage_offset = t.storage_offset();
  impl->storage = t.storage();
  return Tensor(std::move(impl));
}

SavedTensor SavedTensor::save(const Tensor& t, bool keep_data) {
  SavedTensor s;
  if (!t.defined()) return s;
  s.saved = keep_data;
  s.data = keep_data ? detached_alias(t) : metadata_only(t);
  s.version = t.version();
  return s;
}

OpNode::OpNode(const ops::OpDef& op, const ops::OpArgs& args, const std::vector<Tensor>& outputs,
               std::vector<bool> needs_grad)
    : op_(op), args_(args), saved_args_(args.size()), needs_grad_(std::move(needs_grad)) {
  // As PyTorch saves an input only for the gradients that will be computed (SaveMask::read_by):
  // with none wanted (every input a view made under no_grad, say), inputs keep their metadata
  // only, so writing them later is no error and apply never unpacks them; `x * w` with only x's
  // gradient wanted keeps w but not x. Outputs are saved regardless, as PyTorch's.
  saved_inputs_ = op.saves.inputs_for(wanted_args(args_, needs_grad_));
  for (size_t i = 0; i < args_.size(); ++i) {
    if (auto* t = std::get_if<Tensor>(&args_[i]); t && t->defined()) {
      saved_args_[i] = SavedTensor::save(*t, (saved_inputs_ & ops::bit(i)) != 0);
      holds_data_ = holds_data_ || saved_args_[i].saved;
      *t = saved_args_[i].data;
    } else if (auto* list = std::get_if<ops::TensorList>(&args_[i])) {
      bool keep = (saved_inputs_ & ops::bit(i)) != 0;
      holds_data_ = holds_data_ || (keep && !list->empty());
      for (Tensor& e : *list) e = SavedTensor::save(e, keep).data;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs_.push_back(SavedTensor::save(outputs[i], (op.saves.outputs & ops::bit(i)) != 0));
    holds_data_ = holds_data_ || outputs_.back().saved;
    output_sizes.push_back(outputs[i].sizes());
    output_dtypes.push_back(outputs[i].dtype());
  }
}

// Bit j: some gradient of argument j is wanted.
uint32_t OpNode::wanted_args(const ops::OpArgs& args, const std::vector<bool>& needs_grad) {
  uint32_t wanted = 0;
  for (size_t i = 0, flat = 0; i < args.size(); ++i) {
    size_t n = std::holds_alternative<Tensor>(args[i]) ? 1
               : std::holds_alternative<ops::TensorList>(args[i])
                   ? std::get<ops::TensorList>(args[i]).size()
                   : 0;
    for (size_t k = 0; k < n; ++k, ++flat)
      if (flat < needs_grad.size() && needs_grad[flat] && i < 32) wanted |= ops::bit(i);
  }
  return wanted;
}

bool OpNode::saves_written_input(const ops::OpDef& op, const ops::OpArgs& args,
                                 const std::vector<bool>& needs_grad) {
  int written = op.mutated_arg();
  return written >= 0 && written < 32 && !ops::mutates_metadata_only(op) &&
         (op.saves.inputs_for(wanted_args(args, needs_grad)) & ops::bit(written)) != 0;
}

std::string OpNode::name() const {
  return std::string(op_.name);
}

Tensor with_history(const Tensor& data, const Edge& history) {
  if (!history.node || !data.defined() || !grad_mode_enabled()) return data;
  if (auto* acc = dynamic_cast<AccumulateGrad*>(history.node.get()))
    if (std::shared_ptr<TensorImpl> leaf = acc->leaf();
        leaf && leaf->storage == data.storage() && leaf->sizes == data.sizes() &&
        leaf->strides == data.strides() && leaf->storage_offset == data.storage_offset())
      return Tensor(std::move(leaf));
  Tensor t = detached_alias(data);
  set_history(t, history.node, history.input_nr);
  return t;
}

ops::OpArgs OpNode::args_with_history() {
  ops::OpArgs args = args_;
  std::shared_ptr<Node> self = shared_from_this();
  size_t flat = 0;  // index into next_edges: Tensor args and Tensor[] elements, in order
  auto history = [&](size_t arg) -> Edge {
    // The argument an in-place op wrote: a metadata op saved its alias, this node's output; a
    // row that reads its value saved it from before the write (saves_written_input), whose
    // history is the old one.
    if (static_cast<int>(arg) == op_.mutated_arg() && ops::mutates_metadata_only(op_))
      return {self, 0};
    return flat < next_edges.size() ? next_edges[flat] : Edge{};
  };
  for (size_t i = 0; i < args.size(); ++i) {
    if (auto* t = std::get_if<Tensor>(&args[i])) {
      if (saved_args_[i].saved) *t = with_history(*t, history(i));
      ++flat;
    } else if (auto* list = std::get_if<ops::TensorList>(&args[i])) {
      bool keep = (saved_inputs_ & ops::bit(i)) != 0;
      for (Tensor& e : *list) {
        if (keep) e = with_history(e, history(i));
        ++flat;
      }
    }
  }
  return args;
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grad_outputs) {
  if (released_)
    throw std::runtime_error(
        "Trying to backward through the graph a second time (at " + name() +
        "): the saved values were freed after the first backward. Pass retain_graph=true to the "
        "first backward() if you need to call it again.");
  auto check = [&](const SavedTensor& s, const std::string& what) {
    if (s.saved && s.data.version() != s.version)
      throw std::runtime_error(
          "one of the variables needed for gradient computation has been modified by an inplace "
          "operation: " +
          what + " of " + name() + " is at version " + std::to_string(s.data.version()) +
          "; expected version " + std::to_string(s.version) +
          " instead. Avoid modifying it in place (clone() it first).");
  };
  for (size_t i = 0; i < saved_args_.size(); ++i)
    check(saved_args_[i], "input " + std::to_string(i));
  std::vector<Tensor> outs;
  for (size_t i = 0; i < outputs_.size(); ++i) check(outputs_[i], "output " + std::to_string(i));
  // No input wants a gradient (see the constructor): PyTorch's generated apply unpacks what was
  // saved and computes nothing.
  bool wanted = false;
  for (size_t k = 0; k < needs_grad_.size() && k < next_edges.size(); ++k)
    wanted = wanted || (needs_grad_[k] && next_edges[k].node);
  if (!wanted) return std::vector<Tensor>(next_edges.size());
  // Under create_graph the VJP's ops must see the saved values' histories.
  const bool record = grad_mode_enabled();
  for (size_t i = 0; i < outputs_.size(); ++i) {
    Tensor out = outputs_[i].data;
    if (record && outputs_[i].saved && is_floating(out.dtype()))
      out = with_history(out, Edge{shared_from_this(), static_cast<uint32_t>(i)});
    outs.push_back(out);
  }
  ops::OpArgs recorded_args = record ? args_with_history() : ops::OpArgs();
  ops::VjpContext ctx{op_, record ? recorded_args : args_, outs, grad_outputs, needs_grad_};
  std::vector<Tensor> grads = op_.vjp(ctx);
  if (grads.size() != next_edges.size())
    throw std::logic_error("VJP of " + name() + " returned " + std::to_string(grads.size()) +
                           " gradients for " + std::to_string(next_edges.size()) + " inputs");
  return grads;
}

std::string OpNode::double_backward_error() const {
  // VJPs are Tensor ops, so they record themselves. One that calls a row without a derivative is
  // caught as it runs (UndifferentiableOpWatch); gradgradcheck's sweep (tests/autograd) checks
  // the rest.
  return {};
}

void OpNode::release_saved() {
  // As PyTorch: only saved data is freed, so a node that keeps nothing but metadata (add, sum)
  // can be run again without retain_graph.
  if (!holds_data_) return;
  released_ = true;
  args_.clear();
  saved_args_.clear();
  outputs_.clear();
}

namespace {

// PyTorch's layout contract for .grad() (torch/csrc/autograd/utils/grad_layout_contract.h): a
// leaf whose elements are dense and non-overlapping (contiguous, transposed, permuted: the strides,
// size-1 dims aside, a permutation of contiguous ones) gets a gradient with its own strides; any
// other leaf a contiguous one.
bool is_dense(const TensorImpl& leaf) {
  return aotgrad::is_dense(leaf.sizes, leaf.strides);
}

// The incoming gradient obeys the contract: the leaf's sizes, and its strides (a dense leaf's,
// size-1 dims aside, where only a broadcast stride 0 is refused) or contiguous ones.
bool has_layout_of(const Tensor& g, const TensorImpl& leaf) {
  if (g.sizes() != leaf.sizes) return false;
  if (!is_dense(leaf)) return g.is_contiguous();
  for (size_t d = 0; d < leaf.sizes.size(); ++d)
    if (leaf.sizes[d] != 1 ? g.strides()[d] != leaf.strides[d] : g.strides()[d] == 0) return false;
  return true;
}

// A view whose memory nobody else can reach: this handle, its base and the storage are held only
// by each other, and the view spans the whole storage (a slice would pin the rest).
bool is_sole_view(const Tensor& g) {
  const std::shared_ptr<TensorImpl>& impl = g.impl_ptr();
  const std::shared_ptr<Storage>& storage = impl->storage;
  return impl.use_count() == 1 && impl->base.use_count() == 1 && storage.use_count() == 2 &&
         !storage->is_fake() && impl->storage_offset == 0 &&
         static_cast<size_t>(g.numel()) * itemsize(g.dtype()) == storage->nbytes();
}

// `g`'s geometry over its storage, as a tensor of its own (no _base).
Tensor plain(const Tensor& g) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = g.dtype();
  impl->sizes = g.sizes();
  impl->strides = g.strides();
  impl->storage_offset = g.storage_offset();
  impl->storage = g.storage();
  return Tensor(std::move(impl));
}

// A copy of `g` (broadcast to the leaf's sizes) laid out as the contract asks.
Tensor copy_with_layout_of(const Tensor& g, const TensorImpl& leaf) {
  if (!is_dense(leaf)) return clone(g.expand(leaf.sizes));
  int64_t numel = 1;
  for (int64_t n : leaf.sizes) numel *= n;
  Tensor out = plain(as_strided(empty({numel}, g.dtype()), leaf.sizes, leaf.strides, 0));
  kernels::copy_into(out, g);
  return out;
}

// What becomes .grad() on the first accumulation: the incoming tensor itself where it obeys the
// layout contract and is not an alias of something else, else a copy that obeys it. A product's
// gradient for a transposed operand (linear's weight) arrives as the transpose of a fresh
// product: a sole view, re-made as a plain tensor over the same storage, with no copy (the MLP
// step once spent half its time cloning it).
Tensor first_grad(Tensor incoming, const TensorImpl& leaf) {
  if (has_layout_of(incoming, leaf)) {
    if (!incoming.is_view()) return incoming;
    if (is_sole_view(incoming)) return plain(incoming);
  }
  // Own the gradient: a broadcast or aliased incoming tensor must not become .grad().
  return copy_with_layout_of(incoming, leaf);
}

// Under create_graph, as PyTorch's AccumulateGrad with grad mode on: the first gradient becomes
// .grad() as a recorded clone and later ones are added out of place, so .grad() has a grad_fn
// and can be differentiated (and an earlier .grad() a user holds is never written).
std::vector<Tensor> accumulate_recorded(TensorImpl& leaf, Tensor g) {
  if (g.dtype() != leaf.dtype) g = to(g, leaf.dtype);
  if (g.sizes() != leaf.sizes) g = g.expand(leaf.sizes);
  std::lock_guard<std::mutex> lock(leaf_mutex(&leaf));
  AutogradMeta& meta = leaf.autograd_meta();
  meta.grad = meta.grad.defined() ? add(meta.grad, g) : clone(g);
  return {};
}

}  // namespace

AccumulateGrad::AccumulateGrad(const std::shared_ptr<TensorImpl>& leaf, const IntList& sizes)
    : leaf_(leaf), rank_(sizes.size()) {
  if (rank_ <= inline_sizes_.size())
    std::copy(sizes.begin(), sizes.end(), inline_sizes_.begin());
  else
    heap_sizes_ = sizes;
}

bool AccumulateGrad::fitted_sizes(uint32_t, std::span<const int64_t>& sizes) const {
  sizes = {rank_ <= inline_sizes_.size() ? inline_sizes_.data() : heap_sizes_.data(), rank_};
  return true;
}

std::vector<Tensor> AccumulateGrad::apply(std::vector<Tensor>&& grad_outputs) {
  auto leaf = leaf_.lock();
  Tensor g = std::move(grad_outputs.at(0));
  grad_outputs.clear();
  // A leaf whose requires_grad was turned off after the graph was recorded gets nothing.
  if (!leaf || !g.defined() || !leaf->autograd || !leaf->autograd->requires_grad) return {};
  if (grad_mode_enabled()) return accumulate_recorded(*leaf, std::move(g));
  NoGradGuard no_grad;
  Tensor incoming = g.dtype() == leaf->dtype ? std::move(g) : to(g, leaf->dtype);
  std::lock_guard<std::mutex> lock(leaf_mutex(leaf.get()));
  AutogradMeta& meta = leaf->autograd_meta();
  if (!meta.grad.defined()) {
    meta.grad = first_grad(std::move(incoming), *leaf);
  } else {
    kernels::add_into(meta.grad, incoming);
  }
  return {};
}

CopySlices::CopySlices(const Tensor& base, const Tensor& view, std::shared_ptr<Node> fn)
    : base_sizes_(base.sizes()),
      base_strides_(base.strides()),
      base_offset_(base.storage_offset()),
      view_sizes_(view.sizes()),
      view_strides_(view.strides()),
      view_offset_(view.storage_offset()),
      fn_(std::move(fn)) {
  output_sizes.push_back(base_sizes_);
  output_dtypes.push_back(base.dtype());
}

// PyTorch lays the base's gradient out in the base's geometry and copies what fn_ returns into it
// through the view's, copies that refuse a destination overlapping itself: the backward of a
// write through an expanded view (which only fill_ and zero_ allow), or through a view of an
// expanded tensor detach()ed (a base with no _base of its own), raises there.
void CopySlices::check_overlap(bool view) const {
  const IntList& sizes = view ? view_sizes_ : base_sizes_;
  const IntList& strides = view ? view_strides_ : base_strides_;
  if (std::optional<size_t> d = first_expanded_dim(sizes, strides))
    throw std::runtime_error(
        "CopySlices: unsupported operation: more than one element of the written-to tensor "
        "refers to a single memory location (the in-place op wrote through " +
        std::string(view ? "a view" : "a view of a tensor") + " whose dim " + std::to_string(*d) +
        " is expanded), so its gradient cannot be passed back, as in PyTorch. clone() the "
        "expanded tensor before writing into it.");
}

std::string CopySlices::double_backward_error() const {
  return fn_->double_backward_error();
}

// Under create_graph (grad mode on): the same routing with recorded ops, a flat buffer standing
// for the base's storage. as_strided_scatter puts the gradient there in the base's geometry and
// later replaces the view's region with what fn_ returns; as_strided reads the region and the
// base back out. All are rows with VJPs, and fn_ records itself.
std::vector<Tensor> CopySlices::apply_recorded(const Tensor& g) {
  static const ops::OpDef& scatter = ops::lookup("aten.as_strided_scatter.default");
  check_overlap(/*view=*/false);
  int64_t extent = 1;
  for (size_t d = 0; d < base_sizes_.size(); ++d) extent += (base_sizes_[d] - 1) * base_strides_[d];
  const int64_t view_offset = view_offset_ - base_offset_;
  Tensor storage = ops::call1(scatter, {zeros({std::max<int64_t>(extent, 1)}, g.dtype()), g,
                                        base_sizes_, base_strides_, int64_t{0}});
  std::vector<Tensor> res =
      fn_->apply({as_strided(storage, view_sizes_, view_strides_, view_offset)});
  if (res.at(0).defined()) check_overlap(/*view=*/true);
  Tensor region = res.at(0).defined() ? res[0] : zeros(view_sizes_, g.dtype());
  storage = ops::call1(scatter, {storage, region, view_sizes_, view_strides_, view_offset});
  std::vector<Tensor> out{as_strided(storage, base_sizes_, base_strides_, 0)};
  for (size_t i = 1; i < res.size(); ++i) out.push_back(res[i]);
  return out;
}

std::vector<Tensor> CopySlices::apply(std::vector<Tensor>&& grad_outputs) {
  if (grad_mode_enabled()) return apply_recorded(grad_outputs.at(0));
  NoGradGuard no_grad;
  check_overlap(/*view=*/false);
  const Tensor& g = grad_outputs.at(0);
  // result has the base's exact geometry, so the view's geometry addresses the same elements.
  int64_t extent = 1;
  for (size_t d = 0; d < base_sizes_.size(); ++d) extent += (base_sizes_[d] - 1) * base_strides_[d];
  Tensor result = make_tensor({std::max<int64_t>(extent, 1)}, g.dtype());
  // An as_strided view may reach storage elements between the base's (a window over a column of
  // a matrix): they get no gradient from the base, so zeros, as apply_recorded's; uninitialized
  // memory there made the gradient of what was written through the view arbitrary (AotProgramFuzz
  // seed 704999).
  if (numel_of(base_sizes_) != extent) kernels::fill(result, 0);
  Tensor result_base = as_strided(result, base_sizes_, base_strides_, 0);
  kernels::copy_into(result_base, g);
  Tensor slice = as_strided(result, view_sizes_, view_strides_, view_offset_ - base_offset_);
  std::vector<Tensor> res = fn_->apply({clone(slice)});
  if (res.at(0).defined()) check_overlap(/*view=*/true);
  if (res.at(0).defined())
    kernels::copy_into(slice, res[0]);
  else
    kernels::fill(slice, 0);
  std::vector<Tensor> out{result_base};
  for (size_t i = 1; i < res.size(); ++i) out.push_back(res[i]);
  return out;
}

void rebase_view_history(const Tensor& view) {
  Tensor base = view._base();
  const ops::OpDef& as_strided = ops::lookup("aten.as_strided.default");
  ops::OpArgs args{base, view.sizes(), view.strides(), view.storage_offset()};
  ops::normalize(as_strided, args);
  auto node = std::make_shared<OpNode>(as_strided, args, std::vector<Tensor>{view},
                                       std::vector<bool>{true});
  node->next_edges.push_back(gradient_edge(base));
  set_history(view, node, 0);
}

namespace {

bool view_history_is_stale(const Tensor& t, const AutogradMeta& m) {
  if (!m.grad_fn || !t.is_view()) return false;
  auto* op = dynamic_cast<const OpNode*>(m.grad_fn.get());
  return op && op->view_version && *op->view_version != t.version() && t._base().requires_grad();
}

}  // namespace

void adopt_base_history(const Tensor& t) {
  if (!t.defined() || !t.is_view() || t.is_fake()) return;
  std::lock_guard<std::mutex> lock(view_mutex(t.impl()));
  const AutogradMeta* m = t.impl()->autograd.get();
  // A view made under no_grad keeps none (view_creation.h).
  if (m && (m->grad_fn || m->view_creation != ViewCreation::normal)) return;
  if (t._base().grad_fn()) rebase_view_history(t);
}

ViewHistory view_history(const Tensor& t) {
  ViewHistory h;
  if (!t.impl()->autograd || !t.impl()->autograd->grad_fn) return h;
  const std::shared_ptr<Node>& fn = t.impl()->autograd->grad_fn;
  h.has_grad_fn = true;
  h.grad_fn_name =
      dynamic_cast<const OpNode*>(fn.get()) ? pytorch_node_name(fn->name()) : fn->name();
  h.output_nr = t.impl()->autograd->output_nr;
  return h;
}

bool history_reaches_base(const Tensor& t) {
  if (!t.is_view()) return true;
  const AutogradMeta* m = t.impl()->autograd.get();
  std::shared_ptr<Node> node;
  if (m) {
    std::lock_guard<std::mutex> lock(view_mutex(t.impl()));  // another thread may rebase it
    node = m->grad_fn;
  }
  if (const auto* op = dynamic_cast<const OpNode*>(node.get()))
    if (op->view_version && *op->view_version != t.version()) return true;
  return view_nodes_reach_base(node);
}

bool view_nodes_reach_base(std::shared_ptr<Node> node) {
  // A chain of view nodes is as long as the chain of views; the bound only guards a cycle.
  for (int hops = 0; hops < 1024; ++hops) {
    if (!node) return false;
    const auto* op = dynamic_cast<const OpNode*>(node.get());
    if (!op || !op->view_version || node->next_edges.empty()) return true;
    node = node->next_edges[0].node;
  }
  return true;
}

Edge gradient_edge(const Tensor& t) {
  return gradient_edge(t, nullptr);
}

Edge gradient_edge(const Tensor& t, const IntList* accumulator_sizes) {
  if (!t.defined()) return {};
  adopt_base_history(t);
  if (!t.impl()->autograd) return {};
  AutogradMeta& m = *t.impl()->autograd;
  // PyTorch's grad_fn getter: a view made under no_grad or by a multi-output op cannot be given a
  // new history once its storage was written through another alias.
  if (written_since_special_view_creation(t) && (m.grad_fn || t._base().requires_grad()))
    check_view_creation(t, view_history(t), /*indirect=*/true);
  if (t.is_view()) {
    std::lock_guard<std::mutex> lock(view_mutex(t.impl()));
    if (view_history_is_stale(t, m)) rebase_view_history(t);
  }
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  if (!m.requires_grad) return {};
  std::lock_guard<std::mutex> lock(leaf_mutex(t.impl()));
  auto acc = m.grad_accumulator.lock();
  if (!acc) {
    // The leaf's sizes now, as PyTorch's AccumulateGrad records its input metadata when made:
    // the engine fits each gradient to them (fitted_sizes), so a leaf whose sizes changed under
    // no_grad after its accumulator was made gets a gradient of the old sizes, or an invalid-
    // gradient error, as there.
    acc = std::allocate_shared<AccumulateGrad>(PoolAllocator<AccumulateGrad>(), t.impl_ptr(),
                                               accumulator_sizes ? *accumulator_sizes : t.sizes());
    m.grad_accumulator = acc;
  }
  return {acc, 0};
}

void set_history(const Tensor& t, const std::shared_ptr<Node>& node, uint32_t output_nr) {
  AutogradMeta& m = t.impl()->autograd_meta();
  m.requires_grad = true;
  m.grad_fn = node;
  m.output_nr = output_nr;
  if (t.is_view())
    if (auto* op = dynamic_cast<OpNode*>(node.get())) op->view_version = t.version();
}

}  // namespace aotgrad::autograd
