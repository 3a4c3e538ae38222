// The per-call path of a Runtime (aot/runtime.h): the CompiledBackward autograd node, each
// wrapper's before/after, the two bodies, and Runtime::run composing them. Everything here reads
// lists instantiate (aot/instantiate.cpp) computed; nothing is decided per call that was known
// when the artifact was made.
#include "aot/runtime.h"

#include <algorithm>
#include <numeric>
#include <span>
#include <stdexcept>
#include <vector>

#include "aot/runtime_wrappers.h"
#include "aotgrad/autograd.h"
#include "aotgrad/inplace_view.h"
#include "aotgrad/ops.h"
#include "autograd/grad_mode_scope.h"
#include "autograd/nodes.h"
#include "backends/small_buffer.h"
#include "kernels/copy.h"
#include "tensor/iter.h"
#include "tensor/small_object_pool.h"

namespace aotgrad::aot {

using backends::SmallBuffer;

namespace {

// The backward graph was traced with each tangent laid out as its forward output was (PyTorch's
// runtime makes tangents contiguous for the same reason: a view's VJP in the graph is a view).
// A gradient that arrives in another layout (the permute's backward of a returned view of that
// output: AotProgramFuzz, seed 833509) is copied into that one; size-1 dims' strides are free.
Tensor laid_out_as(Tensor g, const ops::TensorMeta& m) {
  bool same = true, contiguous_meta = true;
  int64_t expected = 1;
  for (size_t d = m.sizes.size(); d-- > 0;) {
    if (m.sizes[d] == 1) continue;
    same = same && g.strides()[d] == m.strides[d];
    contiguous_meta = contiguous_meta && m.strides[d] == expected;
    expected *= m.sizes[d];
  }
  if (same) return g;
  if (contiguous_meta) return contiguous(g);
  // Not dense: the graph reads it as values.
  if (!is_dense(m.sizes, m.strides)) return contiguous(g);
  int64_t numel = 1;
  for (int64_t n : m.sizes) numel *= n;
  Tensor out = as_strided(empty({numel}, g.dtype()), m.sizes, m.strides, 0);
  kernels::copy_into(out, g);
  return out;
}

}  // namespace

// The backward half of a compiled call, as an eager autograd node.
class CompiledBackward final : public autograd::Node {
 public:
  // `saved`: the values saved for backward, moved from; `inputs`: the forward's arguments;
  // `outputs`: its results, the ones that get this node as their grad_fn among them.
  CompiledBackward(std::shared_ptr<const BackwardSpec> spec, std::span<Tensor> saved,
                   const SmallBuffer<const TensorImpl*, 8>& inputs, std::span<const Tensor> outputs)
      : spec_(std::move(spec)) {
    // Detached aliases: a saved value that is also a user output must not hold this node
    // through its grad_fn (a reference cycle). Two kinds of saved values are kept as they are,
    // without the alias's allocations:
    // - a value nothing else holds (a fresh intermediate: not an input, not an output, not a
    //   view, no autograd state) can never gain a history;
    // - one of the forward's own arguments that is not also one of its results: its history is
    //   the caller's, as PyTorch's SavedVariable keeps the original of a saved input that is not
    //   an output of its node.
    saved_.reserve(saved.size());
    for (Tensor& value : saved) {
      const uint64_t version = value.version();
      Tensor& t = saved_.emplace_back(Saved{std::move(value), version}).value;
      if (!t.defined()) continue;
      const TensorImpl* impl = t.impl();
      const bool sole = t.impl_ptr().use_count() == 1 && !impl->base && !impl->autograd;
      const bool input = std::find(inputs.begin(), inputs.end(), impl) != inputs.end() &&
                         std::none_of(outputs.begin(), outputs.end(),
                                      [&](const Tensor& o) { return o.impl() == impl; });
      if (!sole && !input) t = autograd::SavedTensor::save(t, true).data;
    }
    // No output_sizes: apply() makes the zeros of a missing gradient from tangent_metas itself
    // (materializes_grads() is false), so the node copies no metadata per call.
  }

  std::string name() const override { return "CompiledFunctionBackward(" + spec_->fn_name + ")"; }
  // As PyTorch's AOTAutograd: the backward is a compiled program, not recorded ops.
  std::string double_backward_error() const override {
    return "aot_function does not currently support double backward: " + name() +
           " runs a compiled backward, which cannot be differentiated again (create_graph=true); "
           "compute higher-order gradients of the eager function";
  }
  uint32_t num_outputs() const override {
    return static_cast<uint32_t>(spec_->tangent_metas.size());
  }
  bool materializes_grads() const override { return false; }

  std::vector<Tensor> apply(std::vector<Tensor>&& grads) override {
    if (released_)
      throw std::runtime_error("Trying to backward through the graph a second time (at " + name() +
                               "): pass retain_graph=true to the first backward() to do that.");
    if (!spec_->backward_error.empty()) throw std::runtime_error(spec_->backward_error);
    // The arguments (saved values, then gradients) are laid out in `grads` itself: the engine
    // hands over a buffer it keeps between walks, so this allocates nothing once warm.
    const size_t num_saved = saved_.size(), num_grads = grads.size();
    grads.insert(grads.begin(), num_saved, Tensor());
    for (size_t i = 0; i < num_saved; ++i) {
      if (saved_[i].value.version() != saved_[i].version) {
        const partition::SavedValue& s = spec_->saved[i];
        throw std::runtime_error(
            "one of the variables needed for gradient computation has been modified by an "
            "inplace operation: %" +
            s.name + " (from " + s.producer +
            ") saved by compiled "
            "function '" +
            spec_->fn_name + "' is at version " + std::to_string(saved_[i].value.version()) +
            "; expected version " + std::to_string(saved_[i].version) + " instead.");
      }
      grads[i] = saved_[i].value;
    }
    for (size_t k = 0; k < num_grads; ++k) {
      const ops::TensorMeta& m = spec_->tangent_metas[k];
      Tensor& g = grads[num_saved + k];
      if (!g.defined())
        g = zeros(m.sizes, m.dtype);
      else if (g.dtype() != m.dtype)
        g = to(g, m.dtype);
      g = laid_out_as(std::move(g), m);
    }
    return spec_->backward(std::move(grads));
  }

  void release_saved() override {
    released_ = true;
    saved_.clear();
  }

  // The epilogue is about to give the caller's tensor `input` a new geometry: a saved value
  // that is that tensor itself becomes a detached alias first, keeping the geometry the
  // backward was compiled for.
  void keep_geometry_of(const TensorImpl* input) {
    for (Saved& s : saved_)
      if (s.value.impl() == input) s.value = autograd::SavedTensor::save(s.value, true).data;
  }

  // The epilogue moved the version counter of `storage` from `before` to `after` without
  // changing its data (as_strided_ of an input, as eager's t_ would): saved aliases of that
  // input are still valid.
  void forgive_version_bump(const Storage* storage, uint64_t before, uint64_t after) {
    for (Saved& s : saved_)
      if (s.value.storage().get() == storage && s.version == before) s.version = after;
  }

 private:
  // A saved value and its version counter when saved (one vector: one allocation per call).
  struct Saved {
    Tensor value;
    uint64_t version;
  };
  std::shared_ptr<const BackwardSpec> spec_;
  std::vector<Saved> saved_;
  bool released_ = false;
};

void RequiresGradChanges::before(CallFrame& f) const {
  for (const RequiresGradChange& c : changes_)
    Tensor(f.inputs[c.input]).requires_grad_(c.requires_grad);
}

namespace {

// An output regenerated as a special view (made under no_grad: view_creation.h) before the
// version bump of a metadata mutation of its storage. The function made it as the data stood
// after its writes, so the bump must not make it look written since it was made (autograd
// would refuse to use it). As for data writes, whose bumps come before the outputs are
// regenerated, a view made before the write is then not refused either: the compiled function
// is more permissive than eager there, never less.
void keep_view_creation_current(const std::vector<Tensor>& outputs,
                                const std::vector<Tensor>& inputs, const Storage* storage,
                                uint64_t before, uint64_t after) {
  for (const Tensor& out : outputs) {
    if (!out.defined() || !out.is_view() || out.storage().get() != storage) continue;
    // A caller's tensor returned as it is was made before the call: the change was a write to it
    // (eager refuses its history afterwards: review of c76b44a).
    bool input = false;
    for (const Tensor& in : inputs) input = input || in.is_same(out);
    if (input) continue;
    AutogradMeta* m = out.impl()->autograd.get();
    if (m && m->view_creation != ViewCreation::normal && m->view_creation_version == before)
      m->view_creation_version = after;
    // Nor make a history that reaches nothing (a view with grad on of a view made under
    // no_grad) look stale: rebased as an as_strided of its base, it would pass the base a
    // gradient eager's, made after the bump, does not (AotProgramFuzz, seeds 803669, 822574,
    // 812205, 800815: squeeze with grad on of as_strided under no_grad after t_). A history that
    // reaches its base is rebased as eager's made before the bump is (seed 822771).
    // The whole chain of view nodes counts: a view with grad on of such a view (chunk of a
    // select of an unbind piece made under no_grad) reaches nothing either (AotProgramFuzz
    // generator 2, seed 160305: rebased, it gave the leaf its element's gradient).
    auto* op = m ? dynamic_cast<autograd::OpNode*>(m->grad_fn.get()) : nullptr;
    if (!op || op->view_version != before) continue;
    if (!autograd::view_nodes_reach_base(m->grad_fn)) op->view_version = after;
  }
}

// An output eager made after the metadata mutation (Tracer::made_after_metadata_mutation) has
// the history of its own view ops, made after the bump; regenerated before the bump, its history
// would turn stale and be rebuilt as as_strided of its base, which passes gradient to elements
// of the base an as_strided reaching past its operand does not (AotProgramFuzz, seeds 131272,
// 718510).
void keep_view_history_current(const std::vector<Tensor>& outputs,
                               const std::vector<size_t>& current, const Storage* storage,
                               uint64_t before, uint64_t after) {
  for (size_t o : current) {
    const Tensor& out = outputs.at(o);
    if (!out.defined() || !out.is_view() || out.storage().get() != storage) continue;
    AutogradMeta* m = out.impl()->autograd.get();
    auto* node = m ? dynamic_cast<autograd::OpNode*>(m->grad_fn.get()) : nullptr;
    if (node && node->view_version == before) node->view_version = after;
  }
}

// Gives `impl` a geometry without autograd or a version bump (the switches eager's tensor made
// in ops the runtime accounts for elsewhere).
void take_geometry(TensorImpl& impl, const IntList& sizes, const IntList& strides,
                   int64_t storage_offset) {
  impl.sizes = sizes;
  impl.strides = strides;
  impl.storage_offset = storage_offset;
}

}  // namespace

// Gives each caller's tensor the geometry the function left its input in (after the outputs
// were regenerated: aliases of an input replay their chain from its original geometry).
void MetadataMutations::after(CallFrame& f) const {
  for (const MetadataMutation& m : mutations_) {
    Tensor target = f.inputs[m.input];
    uint64_t before = target.version();
    if (!m.changed && m.runs.empty()) {
      target.storage()->bump_version();
    } else {
      if (f.node) f.node->keep_geometry_of(target.impl());
      // One change in one mode, or (changes in both modes) each run as eager recorded it or
      // did not.
      if (m.runs.empty()) {
        GradModeScope mode(m.under_grad);
        as_strided_(target, m.sizes, m.strides, m.storage_offset);
      }
      // Runs after a write with grad on in another geometry (MutationEpilogue wrote there and
      // gave the tensor its geometry back): they start from the geometry of that write, which
      // the tensor takes without a version bump, as eager's had it when it wrote.
      if (m.written_in_other_geometry && !m.runs.empty())
        take_geometry(*target.impl(), m.written_sizes, m.written_strides, m.written_storage_offset);
      for (const MetadataMutation::Run& run : m.runs) {
        GradModeScope mode(run.under_grad);
        as_strided_(target, run.sizes, run.strides, run.storage_offset);
      }
    }
    if (f.node) f.node->forgive_version_bump(target.storage().get(), before, target.version());
    keep_view_creation_current(f.result, f.inputs, target.storage().get(), before,
                               target.version());
    // Under no_grad a changed geometry's history is the caller's tensor's new geometry, which
    // the chain replayed from the old one does not pass through: left stale, it is rebuilt
    // from the base as eager's view of the new geometry reads.
    if (!m.changed || m.under_grad) {
      keep_view_history_current(f.result, current_outputs_, target.storage().get(), before,
                                target.version());
      continue;
    }
    // Eager made these from the caller's tensor with its new geometry: their history passes
    // through that tensor's node (kept, or regenerated from its base for a view), which the
    // chain replayed from the old geometry does not.
    // One tensor returned twice stays one tensor.
    trace::PieceCache pieces;
    std::vector<std::pair<const TensorImpl*, Tensor>> replaced;
    for (const OwnViews& v : own_views_) {
      Tensor& out = f.result[v.output];
      if (v.input != m.input || !out.defined()) continue;
      auto same = std::find_if(replaced.begin(), replaced.end(),
                               [&](const auto& r) { return r.first == out.impl(); });
      if (same != replaced.end()) {
        out = same->second;
        continue;
      }
      // Capture matched the steps one by one; the geometry they give is checked all the same.
      Tensor start = target;
      if (v.start_made_before)
        start = as_strided(target.is_view() ? target._base() : target, v.start_sizes,
                           v.start_strides, v.start_storage_offset);
      Tensor fresh = trace::replay_view(start, v.steps, pieces);
      if (fresh.sizes() != out.sizes() || fresh.strides() != out.strides() ||
          fresh.storage_offset() != out.storage_offset())
        continue;
      if (v.make_leaf) fresh.requires_grad_();
      replaced.emplace_back(out.impl(), fresh);
      out = std::move(fresh);
    }
  }
}

void Dedupe::before(CallFrame& f) const {
  std::vector<Tensor> kept;
  kept.reserve(kept_.size());
  for (size_t i : kept_) kept.push_back(f.graph_inputs[i]);
  f.graph_inputs = std::move(kept);
}

void SyntheticBases::before(CallFrame& f) const {
  std::vector<Tensor> out;
  out.reserve(sources_.size());
  for (const Source& s : sources_) {
    const Tensor& t = f.graph_inputs[s.input];
    if (s.kind == Source::Kind::plain) {
      out.push_back(t);
    } else if (s.kind == Source::Kind::common_base) {
      out.push_back(t.is_view() ? t._base() : t);
    } else {
      NoGradGuard no_grad;
      int64_t numel = static_cast<int64_t>(t.storage()->nbytes() / itemsize(t.dtype()));
      out.push_back(as_strided(t, {numel}, {1}, 0));
    }
  }
  f.graph_inputs = std::move(out);
}

namespace {

// Writes `value` (laid out as `target` in its own geometry) into `target` with grad on, the
// copy recorded while `target` has the geometry `w` names: eager wrote the tensor there after
// changing its geometry under no_grad (AotProgramFuzz, seed 1017364), so its node takes the
// gradient of the geometry the caller ends with as it is laid out. The value is staged in a
// storage laid out as the caller's, so that the written geometry picks from it the elements it
// picks from the caller's tensor, and its gradient finds its way back to the value's.
void write_in_other_geometry(Tensor& target, const Tensor& value,
                             const MutationEpilogue::Write& w) {
  TensorImpl& impl = *target.impl();
  const IntList sizes = impl.sizes, strides = impl.strides;
  const int64_t offset = impl.storage_offset;
  Tensor buffer;
  {
    NoGradGuard no_grad;
    int64_t numel = static_cast<int64_t>(impl.storage->nbytes() / itemsize(impl.dtype));
    buffer = zeros({numel}, impl.dtype);
  }
  Tensor staged = as_strided(buffer, sizes, strides, offset);
  copy_(staged, value);
  Tensor src = as_strided(buffer, w.sizes, w.strides, w.storage_offset);
  // The geometry is swapped without a version bump (eager's change bumped it once, as the
  // caller's as_strided_ in MetadataMutations does) and restored however the copy ends. Where
  // eager recorded the changes that led there (geometry_recorded), the swap is an as_strided_
  // with grad on: the copy's backward passes the history before it a gradient in the caller's
  // geometry, as eager's passes its history one in the geometry it recorded.
  struct Restore {
    TensorImpl& impl;
    IntList sizes, strides;
    int64_t offset;
    ~Restore() {
      impl.sizes = std::move(sizes);
      impl.strides = std::move(strides);
      impl.storage_offset = offset;
    }
  } restore{impl, sizes, strides, offset};
  if (w.geometry_recorded)
    as_strided_(target, w.sizes, w.strides, w.storage_offset);
  else
    take_geometry(impl, w.sizes, w.strides, w.storage_offset);
  copy_(target, src);
}

}  // namespace

void MutationEpilogue::after(CallFrame& f) const {
  for (const Write& w : writes_) {
    const Tensor& value = f.outs[w.output];
    // Eager autograd records the write only when it was made with grad on, not through detach().
    bool recorded = w.visible && value.requires_grad();
    GradModeScope mode(recorded);
    Tensor target = f.graph_inputs[w.graph_input];
    if (recorded && w.in_other_geometry && !target.is_view())
      write_in_other_geometry(target, value, w);
    else
      copy_(target, value);
  }
}

void AliasedOutputs::after(CallFrame& f) const {
  if (identity_) {
    f.result = std::move(f.outs);
    for (size_t o = 0; o < outputs_.size(); ++o) {
      Tensor& t = f.result[o];
      if (outputs_[o].plain_tensor && t.defined() && t.is_view()) t.impl()->base.reset();
    }
    return;
  }
  using Kind = Output::Kind;
  std::vector<Tensor>& result = f.result;
  result.resize(outputs_.size());
  // Values first: aliases of user outputs replay from them.
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Output& out = outputs_[o];
    if (out.kind == Kind::graph_output) {
      result[o] = f.outs[out.index];
      // A graph output computed by a view op (the value of an intermediate after t_()) is a
      // plain tensor in eager: it must not keep the backend's buffer as its _base.
      if (out.plain_tensor && result[o].defined() && result[o].is_view())
        result[o].impl()->base.reset();
      if (out.make_leaf) result[o].requires_grad_();
    } else if (out.kind == Kind::user_input) {
      result[o] = f.inputs[out.index];
    }
  }
  // An intermediate base is its storage's own tensor in eager, never a view. The graph may
  // compute it with a view op (a write through a view of it), and then the backend's buffer is
  // its _base: a view of it replayed under no_grad would ask that buffer, which requires no
  // grad, whether it requires grad (eager's answers yes, from the base).
  for (const Output& out : outputs_)
    if (out.kind == Kind::alias_of_graph_output && f.outs[out.index].defined() &&
        f.outs[out.index].is_view())
      f.outs[out.index].impl()->base.reset();
  trace::PieceCache pieces;
  std::vector<std::pair<size_t, Tensor>> detached;  // by history output: one alias per call
  for (size_t o = 0; o < outputs_.size(); ++o) {
    const Output& out = outputs_[o];
    if (out.same_as != SIZE_MAX) {
      result[o] = result[out.same_as];
      continue;
    }
    const Tensor* base = nullptr;
    switch (out.kind) {
      case Kind::alias_of_graph_input:
        base = &f.graph_inputs[out.index];
        break;
      case Kind::alias_of_user_input:
        base = &f.inputs[out.index];
        break;
      case Kind::alias_of_graph_output:
        base = &f.outs[out.index];
        break;
      case Kind::alias_of_user_output:
        base = &result[out.index];
        break;
      default:
        continue;  // graph outputs and inputs were placed above
    }
    if (out.history == SIZE_MAX) {
      result[o] = trace::replay_view(*base, out.chain, pieces);
    } else {
      Tensor alias = detached_alias_with_history(*base, out, f.outs, pieces, detached);
      result[o] = trace::replay_view(alias, out.after_history, pieces);
    }
    if (out.make_leaf) result[o].requires_grad_();
  }
}

// The detach()ed alias `out` goes through, over the base's storage as in eager, with the history
// the graph computed for it: eager recorded the writes made through it with grad on on the alias
// itself. Outputs going through one alias share it, as eager's share their _base.
Tensor AliasedOutputs::detached_alias_with_history(const Tensor& base, const Output& out,
                                                   const std::vector<Tensor>& outs,
                                                   trace::PieceCache& pieces,
                                                   std::vector<std::pair<size_t, Tensor>>& made) {
  for (const auto& [history, alias] : made)
    if (history == out.history) return alias;
  Tensor alias = trace::replay_view(base, out.chain, pieces);
  const Tensor& carrier = outs[out.history];
  if (carrier.requires_grad() && carrier.grad_fn())
    autograd::set_history(alias, carrier.grad_fn(), carrier.impl()->autograd->output_nr);
  made.emplace_back(out.history, alias);
  return alias;
}

void InferenceBody::call(CallFrame& f) const {
  NoGradGuard no_grad;  // the compiled graphs are not recorded by eager autograd
  f.outs =
      graph_(keep_graph_inputs_ ? std::vector<Tensor>(f.graph_inputs) : std::move(f.graph_inputs));
}

namespace {

// A copy of `t`'s whole storage, seen with `t`'s geometry (recorded by autograd: the gradient of
// the copy reaches `t`'s elements, none of the others). An as_strided the graph applies to it
// addresses the same elements as on the caller's storage, outside `t` too, as eager's read does.
Tensor whole_storage_copy(const Tensor& t) {
  const auto n = static_cast<int64_t>(t.storage()->nbytes() / itemsize(t.dtype()));
  Tensor copy = clone(as_strided(t, {n}, {1}, int64_t{0}));
  return as_strided(copy, t.sizes(), t.strides(), t.storage_offset());
}

// A clone laid out as `t`, recorded by autograd: the forward graph was traced on the caller's
// layout, and its view ops need it (AotProgramFuzz, seed 1714260: view of a transpose of a
// transposed input, which a contiguous clone cannot give). A dense tensor is cloned in its own
// strides (PyTorch's preserve_format), through a permutation to its storage order; any other as a
// copy of its whole storage.
Tensor clone_laid_out_as(const Tensor& t) {
  if (t.is_contiguous()) return clone(t);
  if (!is_dense(t.sizes(), t.strides())) return whole_storage_copy(t);
  const size_t n = t.sizes().size();
  IntList order(n);
  std::iota(order.begin(), order.end(), int64_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return t.strides()[a] > t.strides()[b]; });
  IntList inverse(n);
  for (size_t i = 0; i < n; ++i) inverse[order[i]] = static_cast<int64_t>(i);
  return permute(clone(permute(t, order)), inverse);
}

}  // namespace

// A written input, and any input sharing its storage, is passed as a clone (recorded by
// autograd), so the old values the forward saves for backward are not overwritten, nor their
// version counter moved, by the copy_ of the epilogue (PyTorch clones mutated inputs in the graph
// for the same reason). Eager's own version errors are reported separately
// (BackwardSpec::backward_error). One an as_strided read in place before the write is passed as
// a copy of its whole storage (whole_storage_copy), where a contiguous clone holds other elements;
// any other in its own layout (clone_laid_out_as).
void AutogradBody::call(CallFrame& f) const {
  std::vector<Tensor> args =
      s_.keep_graph_inputs ? std::vector<Tensor>(f.graph_inputs) : std::move(f.graph_inputs);
  // A leaf's gradient in the sizes eager's accumulator recorded goes to it directly, not through
  // the node of a clone made in the caller's sizes.
  std::vector<autograd::Edge> sized_edges;
  for (const auto& [k, sizes] : s_.accumulator_sizes)
    sized_edges.push_back(autograd::gradient_edge(args[s_.grad_of_primal[k]], &sizes));
  if (!s_.written_inputs.empty()) {
    std::vector<const Storage*> written;
    for (size_t g : s_.written_inputs) written.push_back(args[g].storage().get());
    for (size_t g = 0; g < args.size(); ++g) {
      Tensor& t = args[g];
      if (std::find(written.begin(), written.end(), t.storage().get()) == written.end()) continue;
      const bool whole = std::find(s_.whole_storage_inputs.begin(), s_.whole_storage_inputs.end(),
                                   g) != s_.whole_storage_inputs.end();
      t = whole ? whole_storage_copy(t) : clone_laid_out_as(t);
    }
  }
  NoGradGuard no_grad;  // the compiled graphs are not recorded by eager autograd
  std::vector<autograd::Edge> edges;
  edges.reserve(s_.grad_of_primal.size());
  for (size_t k = 0, sized = 0; k < s_.grad_of_primal.size(); ++k) {
    if (sized < sized_edges.size() && s_.accumulator_sizes[sized].first == k)
      edges.push_back(std::move(sized_edges[sized++]));
    else
      edges.push_back(autograd::gradient_edge(args[s_.grad_of_primal[k]]));
  }
  SmallBuffer<const TensorImpl*, 8> arg_impls(args.size());
  for (size_t i = 0; i < args.size(); ++i) arg_impls[i] = args[i].impl();
  std::vector<Tensor> outs = s_.forward(std::move(args));
  auto node = std::allocate_shared<CompiledBackward>(
      PoolAllocator<CompiledBackward>(), s_.backward,
      std::span<Tensor>(outs).subspan(s_.num_outputs), arg_impls,
      std::span<const Tensor>(outs).first(s_.num_outputs));
  outs.resize(s_.num_outputs);
  node->next_edges = std::move(edges);
  for (size_t k = 0; k < s_.tangent_of_output.size(); ++k) {
    Tensor& out = outs[s_.tangent_of_output[k]];
    if (out.grad_fn()) continue;  // the same tensor returned twice keeps its first slot
    autograd::set_history(out, node, static_cast<uint32_t>(k));
  }
  f.outs = std::move(outs);
  f.node = std::move(node);
}

Runtime::Runtime(std::vector<std::unique_ptr<const RuntimeWrapper>> wrappers,
                 std::unique_ptr<const CompiledBody> body)
    : wrappers_(std::move(wrappers)), body_(std::move(body)) {}

Runtime::~Runtime() = default;

std::vector<Tensor> Runtime::run(const std::vector<Tensor>& inputs) const {
  CallFrame f(inputs);
  f.graph_inputs.reserve(std::max(inputs.size(), body_->num_graph_outputs()));
  f.graph_inputs.assign(inputs.begin(), inputs.end());
  for (const auto& w : wrappers_) w->before(f);
  body_->call(f);
  for (auto it = wrappers_.rbegin(); it != wrappers_.rend(); ++it) (*it)->after(f);
  return std::move(f.result);
}

std::vector<std::string> Runtime::describe() const {
  std::vector<std::string> out;
  for (const auto& w : wrappers_) out.emplace_back(w->name());
  out.emplace_back(body_->name());
  return out;
}

}  // namespace aotgrad::aot
