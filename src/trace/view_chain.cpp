// The tracer keeping views up to date: view chains (view_chain.h), replaying a view from its
// storage's root, syncing a tensor whose storage was written, as_strided's checks and rebasing,
// and scattering a write through a view back into the root. Tracer's other members are in
// tracer.cpp.
#include "trace/view_chain.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "aotgrad/autograd.h"
#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"
#include "autograd/grad_mode_scope.h"
#include "kernels/scatter.h"
#include "tensor/checked_math.h"
#include "tensor/overlap.h"
#include "trace/tracer.h"

namespace aotgrad::trace {

namespace {

// One past the last storage position a geometry reaches; 0 for an empty one. The geometries
// given are a tensor's, or a window as_strided's meta accepted (Tracer::record checks it first).
int64_t reach_end(const IntList& sizes, const IntList& strides, int64_t offset) {
  std::optional<ReachableOffsets> r = checked_reachable_offsets(sizes, strides, offset);
  if (!r) throw std::logic_error("reach_end: a geometry as_strided's meta would refuse");
  return r->empty ? 0 : r->hi + 1;
}

}  // namespace

bool is_as_strided(const ViewStep& step) {
  return step.op->name == "aten.as_strided.default";
}

bool is_expand(const ViewStep& step) {
  return step.op->name == "aten.expand.default";
}

size_t last_as_strided(const std::vector<ViewStep>& chain, size_t steps) {
  for (size_t i = steps; i-- > 0;)
    if (is_as_strided(chain[i])) return i;
  return SIZE_MAX;
}

size_t last_detach_before(const std::vector<ViewStep>& chain, size_t k) {
  for (size_t i = k; i-- > 0;)
    if (chain[i].detached != SIZE_MAX) return i;
  return SIZE_MAX;
}

std::optional<std::vector<int64_t>> dense_order(const IntList& sizes, const IntList& strides) {
  std::vector<int64_t> order(sizes.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  // Dims of size 1 first: their strides never address anything.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    bool unit_a = sizes[a] == 1, unit_b = sizes[b] == 1;
    if (unit_a != unit_b) return unit_a;
    return !unit_a && strides[a] > strides[b];
  });
  int64_t expected = 1;
  for (size_t i = order.size(); i-- > 0;) {
    int64_t d = order[i];
    if (sizes[d] == 0) return std::nullopt;
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return std::nullopt;
    expected *= sizes[d];
  }
  return order;
}

bool window_within(const ViewStep& step, int64_t first, int64_t count) {
  if (ops::is_none(step.args, 3)) return false;
  const IntList& size = ops::int_list_arg(step.args, 1);
  const IntList& stride = ops::int_list_arg(step.args, 2);
  const int64_t lo = ops::int_arg(step.args, 3);
  int64_t hi = lo;
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) return lo >= first;
    hi += (size[d] - 1) * stride[d];
  }
  return lo >= first && hi < first + count;
}

namespace {

// Calls `f` with each position (sizes, strides) reaches from 0, in row-major index order, until
// it returns false; false when it did.
template <typename F>
bool each_position(const IntList& sizes, const IntList& strides, F f) {
  for (int64_t n : sizes)
    if (n == 0) return true;
  std::vector<int64_t> index(sizes.size(), 0);
  int64_t pos = 0;
  for (;;) {
    if (!f(pos)) return false;
    size_t d = sizes.size();
    for (; d-- > 0;) {
      if (++index[d] < sizes[d]) {
        pos += strides[d];
        break;
      }
      pos -= (sizes[d] - 1) * strides[d];
      index[d] = 0;
    }
    if (d == SIZE_MAX) return true;
  }
}

}  // namespace

bool window_within_positions(const ViewStep& step, int64_t first, const IntList& sizes,
                             const IntList& strides) {
  constexpr int64_t kMaxPositions = int64_t{1} << 22;
  if (ops::is_none(step.args, 3)) return false;
  const IntList& size = ops::int_list_arg(step.args, 1);
  const IntList& stride = ops::int_list_arg(step.args, 2);
  const int64_t lo = ops::int_arg(step.args, 3) - first;
  int64_t extent = 1, count = 1;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return false;
    extent += (sizes[d] - 1) * strides[d];
  }
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] == 0) return lo >= 0;
    if (stride[d] < 0 || count > kMaxPositions / size[d]) return false;
    count *= size[d];
  }
  if (lo < 0 || extent > kMaxPositions) return false;
  std::vector<bool> owned(static_cast<size_t>(extent), false);
  each_position(sizes, strides, [&](int64_t p) {
    owned[static_cast<size_t>(p)] = true;
    return true;
  });
  return each_position(size, stride, [&](int64_t p) {
    return lo + p < extent && owned[static_cast<size_t>(lo + p)];
  });
}

std::vector<ViewStep> rebased_chain(const std::vector<ViewStep>& chain, size_t steps) {
  const size_t k = last_as_strided(chain, steps);
  if (k == SIZE_MAX) return {chain.begin(), chain.begin() + static_cast<std::ptrdiff_t>(steps)};
  // A step that took a geometry changed under no_grad starts a history of its own too.
  size_t j = last_detach_before(chain, k);
  for (size_t i = k; i-- > 0 && (j == SIZE_MAX || i > j);)
    if (chain[i].geometry != SIZE_MAX) {
      j = i;
      break;
    }
  std::vector<ViewStep> out = j == SIZE_MAX ? std::vector<ViewStep>{} : rebased_chain(chain, j + 1);
  ViewStep as_strided = chain[k];
  for (size_t i = j == SIZE_MAX ? 0 : j + 1; i < k; ++i)
    as_strided.grad_mode = as_strided.grad_mode && chain[i].grad_mode;
  out.push_back(std::move(as_strided));
  out.insert(out.end(), chain.begin() + static_cast<std::ptrdiff_t>(k + 1),
             chain.begin() + static_cast<std::ptrdiff_t>(steps));
  return out;
}

// ---- keeping views up to date ----

Tensor Tracer::replay(StorageState& s, const std::vector<ViewStep>& chain, size_t steps) {
  Tensor cur = bind(s.root, requires_grad(s.root));
  const std::vector<ViewStep> rebased = rebased_chain(chain, steps);
  for (size_t i = 0; i < rebased.size(); ++i) {
    const ViewStep& step = rebased[i];
    if (i == 0 && is_as_strided(step) && regenerated_past_written_input(s, step))
      cur = imaged_as_strided(s, step);
    else if (is_as_strided(step) && as_strided_needs_rebase(s, step, /*writing=*/false, i == 0))
      cur = rebased_as_strided(s, step, cur);
    else
      cur = apply_step(step, cur);
  }
  return cur;
}

// Eager regenerates such a view as an as_strided of the caller's base, whose gradient reaches
// the window's elements outside the input too: only where nothing there takes a gradient (the
// input did not require grad when called, and no other input of its base was written with grad
// on) is the gradient the root's elements take all of it.
bool Tracer::regenerated_past_written_input(const StorageState& s, const ViewStep& step) const {
  const size_t storage = static_cast<size_t>(&s - storages_.data());
  return imaged_after_write(storage) && !window_in_root(s, step) && !requires_grad(s.first) &&
         !caller_base_has_history(storage);
}

Tensor Tracer::imaged_as_strided(const StorageState& s, const ViewStep& step) {
  GradModeScope mode(step.grad_mode);
  const IntList& size = ops::int_list_arg(step.args, 1);
  const IntList& stride = ops::int_list_arg(step.args, 2);
  const int64_t offset = ops::int_arg(step.args, 3);
  Tensor image = storage_image(static_cast<size_t>(&s - storages_.data()),
                               reach_end(size, stride, offset), /*root_grad=*/true);
  return call_untracked("aten.as_strided.default", {image, size, stride, offset});
}

Tensor Tracer::permuted(const Tensor& t, const IntList& dims) {
  return call_untracked("aten.permute.default", {t, dims});
}

// The root's dims taken in storage order and copied row-major: the storage from root_offset on,
// whatever the layout of the root's current value (or of the copy the runtime passes of a written
// input). A gapped root is laid into a zeroed image of its storage instead, by its geometry.
Tensor Tracer::storage_copy(const StorageState& s, const Tensor& root) {
  if (s.storage_order)
    return call_untracked("aten.clone.default", {permuted(root, *s.storage_order)});
  if (root.sizes() != s.gapped_sizes)
    throw UnsupportedError(
        "aten.as_strided.default on input " + std::to_string(s.input_index) +
        ", which is not dense in its storage and whose sizes changed in place: aot_function "
        "cannot yet rebase as_strided's absolute offsets there. Apply it to a contiguous "
        "clone(), or use slice/select/view.");
  return image_of(root, s.gapped_sizes, s.gapped_strides);
}

Tensor Tracer::image_of(const Tensor& value, const IntList& sizes, const IntList& strides) {
  int64_t extent = 1;
  for (size_t d = 0; d < sizes.size(); ++d) extent += (sizes[d] - 1) * strides[d];
  Tensor zeros = call_untracked("aten.new_zeros.default", {value, IntList{extent}});
  return call_untracked("aten.as_strided_scatter.default",
                        {zeros, value, sizes, strides, int64_t{0}});
}

bool Tracer::window_in_root(const StorageState& s, const ViewStep& step) const {
  if (s.gapped())
    return window_within_positions(step, s.root_offset, s.gapped_sizes, s.gapped_strides);
  if (!s.storage_order) return false;
  int64_t numel = 1;
  for (int64_t n : graph_.value(s.root).meta.sizes) numel *= n;
  return window_within(step, s.root_offset, numel);
}

// The window is read in storage_copy, at its offset from root_offset.
Tensor Tracer::rebased_as_strided(const StorageState& s, const ViewStep& step, const Tensor& root) {
  GradModeScope mode(step.grad_mode);
  ops::OpArgs args = step.args;
  args[0] = storage_copy(s, root);
  args[3] = ops::int_arg(step.args, 3) - s.root_offset;
  return record(*step.op, args, /*track=*/false).at(0);
}

Tensor Tracer::apply_step(const ViewStep& step, const Tensor& base) {
  ops::OpArgs args = step.args;
  args[step.op->view_of_arg()] = base;
  Tensor v;
  {
    GradModeScope mode(step.grad_mode);
    v = record(*step.op, args, /*track=*/false).at(0);
  }
  if (step.geometry != SIZE_MAX) {
    EnableGradGuard grad;
    ops::OpArgs gargs = geometry_update_args(geometry_updates_[step.geometry], v);
    return record(ops::lookup("aotgrad.geometry_update.default"), gargs, /*track=*/false).at(0);
  }
  if (step.detached == SIZE_MAX || detached_histories_[step.detached] == graph::kNoValue) return v;
  // The data is the storage's (writes through other aliases since show), the history the
  // alias's own: hidden_update passes gradient to its first argument only. Grad mode on whatever
  // the detach() was made under: the history came from writes made with grad on.
  EnableGradGuard grad;
  ops::OpArgs hargs{bind(detached_histories_[step.detached], true), v};
  return record(ops::lookup("aotgrad.hidden_update.default"), hargs, /*track=*/false).at(0);
}

std::optional<Tracer::DetachedHistory> Tracer::detached_history(const TensorState& ts) {
  for (size_t k = ts.chain.size(); k-- > 0;) {
    if (size_t g = ts.chain[k].geometry; g != SIZE_MAX) {
      Tensor updated = replay(storages_[ts.storage], ts.chain, k + 1);
      return DetachedHistory{k, SIZE_MAX - g, graph::ValueId{updated.impl()->trace.value}};
    }
    size_t id = ts.chain[k].detached;
    if (id == SIZE_MAX) continue;
    if (detached_histories_[id] == graph::kNoValue) return std::nullopt;
    Tensor alias = replay(storages_[ts.storage], ts.chain, k + 1);
    return DetachedHistory{k, id, graph::ValueId{alias.impl()->trace.value}};
  }
  return std::nullopt;
}

void Tracer::sync(const Tensor& t) {
  if (!traced_here(t) || t.impl()->trace.alias == UINT32_MAX) return;
  TensorState& ts = tensors_[t.impl()->trace.alias];
  StorageState& s = storages_[ts.storage];
  if (ts.generation == s.generation) return;
  Tensor fresh = replay(s, ts.chain, ts.chain.size());
  // Eager regenerates the view's history the same way, and views made from it later extend that
  // history; a returned alias is regenerated at run time from the chain as it is now.
  ts.chain = rebased_chain(ts.chain, ts.chain.size());
  graph::ValueId v{fresh.impl()->trace.value};
  t.impl()->trace.value = v.index;
  ts.generation = s.generation;
  bool r = requires_grad(v);
  if (r || t.requires_grad()) t.impl()->autograd_meta().requires_grad = r;
}

// Before an op uses them: an output is synced by value_of, without this check.
void Tracer::sync_args(ops::OpArgs& args) {
  auto use = [&](const Tensor& t) {
    if (traced_here(t) && t.impl()->trace.alias != UINT32_MAX) {
      const TensorState& ts = tensors_[t.impl()->trace.alias];
      if (ts.generation != storages_[ts.storage].generation)
        check_stale_read_past_input(storages_[ts.storage], ts.chain);
    }
    sync(t);
  };
  for (ops::Arg& a : args) {
    if (auto* t = std::get_if<Tensor>(&a))
      use(*t);
    else if (auto* l = std::get_if<ops::TensorList>(&a))
      for (Tensor& e : *l) use(e);
  }
}

namespace {

UnsupportedError as_strided_refusal(const StorageState& s, bool writing, bool outside) {
  std::string what =
      s.input_index >= 0 ? "input " + std::to_string(s.input_index) : "a tensor the function made";
  std::string when = writing ? ", is written through" : " after it was mutated";
  if (outside)
    return UnsupportedError(
        "aten.as_strided.default on " + what + when +
        ", reaches storage elements outside it: aot_function holds only the input's own "
        "elements there. Pass the tensor whose storage it reads, or use slice/select/view.");
  std::string which = !s.storage_order ? "which is not dense in its storage (gaps or overlaps)"
                      : s.root_offset != 0
                          ? "which starts at storage offset " + std::to_string(s.root_offset)
                          : "which is not a contiguous tensor over its whole storage";
  return UnsupportedError("aten.as_strided.default on " + what + ", " + which + when +
                          ": aot_function cannot yet rebase as_strided's absolute offsets there. "
                          "Apply it to a contiguous clone(), or use slice/select/view.");
}

}  // namespace

void Tracer::check_as_strided(size_t storage) {
  StorageState& s = storages_[storage];
  if (s.input_index >= 0) reads_input_offsets_ = true;
  if (s.root_offset == 0 && s.root_is_storage) return;
  if (s.generation != 0) throw as_strided_refusal(s, /*writing=*/false, /*outside=*/false);
  check_read_in_place_after_shared_write(storage);
  s.read_in_place = s.read_in_place || s.input_index >= 0;
}

std::optional<graph::ValueId> Tracer::in_place_view(const TensorState& ts) {
  const StorageState& s = storages_[ts.storage];
  if (s.root_offset == 0 && s.root_is_storage) return std::nullopt;
  if (std::none_of(ts.chain.begin(), ts.chain.end(), is_as_strided)) return std::nullopt;
  const std::vector<ViewStep> chain = ts.chain;
  Tensor cur = bind(s.root, requires_grad(s.root));
  for (const ViewStep& step : chain) cur = apply_step(step, cur);
  return graph::ValueId{cur.impl()->trace.value};
}

bool Tracer::imaged_after_write(size_t storage) const {
  const StorageState& s = storages_[storage];
  if (s.input_index < 0 || s.generation == 0 || (s.root_offset == 0 && s.root_is_storage))
    return false;
  if (!s.storage_order && !s.gapped()) return false;  // overlaps itself
  if (graph_.value(s.root).meta.sizes != graph_.value(s.first).meta.sizes) return false;
  // The input's geometry changed in place: its value no longer lies where the input's did.
  return std::find(metadata_touched_storages_.begin(), metadata_touched_storages_.end(), storage) ==
         metadata_touched_storages_.end();
}

Tensor Tracer::storage_image(size_t storage, int64_t extent, bool root_grad) {
  check_read_in_place_after_shared_write(storage);
  reads_input_offsets_ = true;
  StorageState& s = storages_[storage];
  s.read_in_place = true;
  const ops::TensorMeta input = graph_.value(s.first).meta;
  extent = std::max(extent, reach_end(input.sizes, input.strides, input.storage_offset));
  // bind marks the value's requires_grad: each keeps its own.
  auto value = [&](graph::ValueId v) { return bind(v, requires_grad(v)); };
  Tensor whole;
  {
    GradModeScope off(false);  // the elements outside the input take no gradient
    whole = call_untracked("aten.as_strided.default",
                           {value(s.first), IntList{extent}, IntList{1}, int64_t{0}});
  }
  GradModeScope mode(root_grad && autograd::grad_mode_enabled());
  return call_untracked("aten.as_strided_scatter.default",
                        {whole, value(s.root), input.sizes, input.strides, input.storage_offset});
}

std::optional<graph::ValueId> Tracer::image_past_written_input(const TensorState& ts,
                                                               const Tensor& base,
                                                               const ViewStep& step, bool on_root) {
  if (!imaged_after_write(ts.storage)) return std::nullopt;
  if (on_root && window_in_root(storages_[ts.storage], step)) return std::nullopt;  // rebased
  if (!kernels::is_non_overlapping(base.sizes(), base.strides())) return std::nullopt;
  const int64_t extent =
      std::max(reach_end(base.sizes(), base.strides(), base.storage_offset()),
               reach_end(ops::int_list_arg(step.args, 1), ops::int_list_arg(step.args, 2),
                         ops::int_arg(step.args, 3)));
  Tensor image = storage_image(ts.storage, extent, /*root_grad=*/false);
  // The window's gradient reaches base's elements only: base's value scattered in last.
  GradModeScope mode(step.grad_mode);
  const graph::ValueId b{base.impl()->trace.value};
  Tensor with_base = call_untracked(
      "aten.as_strided_scatter.default",
      {image, bind(b, requires_grad(b)), base.sizes(), base.strides(), base.storage_offset()});
  return graph::ValueId{with_base.impl()->trace.value};
}

Tensor Tracer::call_untracked(std::string_view name, ops::OpArgs args) {
  const ops::OpDef& op = ops::lookup(name);
  ops::normalize(op, args);
  return record(op, args, /*track=*/false).at(0);
}

bool Tracer::as_strided_needs_rebase(StorageState& s, const ViewStep& step, bool writing,
                                     bool on_root) {
  if (s.input_index >= 0) reads_input_offsets_ = true;
  if (s.root_offset == 0 && s.root_is_storage) return false;
  const bool rebasable = s.storage_order || s.gapped();
  const bool within = window_in_root(s, step);
  if (on_root && rebasable && within) return true;
  if (!writing && s.generation == 0) {
    check_read_in_place_after_shared_write(static_cast<size_t>(&s - storages_.data()));
    s.read_in_place = s.read_in_place || s.input_index >= 0;
    return false;
  }
  throw as_strided_refusal(s, writing, /*outside=*/on_root && rebasable && !within);
}

// A view through as_strided of an input made before the input's geometry changed in place (no
// data written): eager regenerates its history at this use as an as_strided of the caller's base,
// which passes gradient to the storage elements the window reaches outside the input. The graph,
// given the input alone, reads them in place but cannot send them gradient (AotProgramFuzz,
// seed 838109: the element outside got 0). Returned without a use, the view is regenerated at run
// time from the caller's tensor, which is exact (sync_args checks; value_of does not).
void Tracer::check_stale_read_past_input(const StorageState& s,
                                         const std::vector<ViewStep>& chain) const {
  if (s.generation != 0 || s.input_index < 0 || !requires_grad(s.root)) return;
  if (s.root_offset == 0 && s.root_is_storage) return;
  const size_t k = last_as_strided(chain, chain.size());
  if (k == SIZE_MAX || !chain[k].grad_mode || last_detach_before(chain, k) != SIZE_MAX) return;
  if (window_in_root(s, chain[k])) return;
  throw as_strided_refusal(s, /*writing=*/false, /*outside=*/true);
}

Tracer::Scattered Tracer::scatter_into_root(size_t state_index, const Tensor& updated) {
  // A copy: the scatter ops below are traced with tracking, which grows tensors_ and storages_
  // and would leave references into them dangling.
  const std::vector<ViewStep> chain = tensors_[state_index].chain;
  const size_t storage = tensors_[state_index].storage;
  graph::ValueId root = storages_[storage].root;
  // as_strided's geometry addresses the storage: the update scatters back to the last as_strided
  // step, then into the root with that step's geometry, whatever the steps before it were
  // (scattering it into the view before it, laid out row-major in the graph, wrote other elements
  // than eager's: AotProgramFuzz, seed 400014).
  const size_t k = last_as_strided(chain, chain.size());
  const size_t first = k == SIZE_MAX ? 0 : k + 1;
  const bool rebase =
      k != SIZE_MAX && as_strided_needs_rebase(storages_[storage], chain[k], /*writing=*/true,
                                               last_detach_before(chain, k) == SIZE_MAX);
  // bases[i - first] is the tensor chain step i views; the update flows back innermost first.
  // (Nothing is recorded for a write of the as_strided view itself: names stay as they were.)
  std::vector<Tensor> bases;
  if (k == SIZE_MAX)
    bases.push_back(bind(root, requires_grad(root)));
  else if (first < chain.size())
    bases.push_back(replay(storages_[storage], chain, k + 1));
  for (size_t i = first; i + 1 < chain.size(); ++i)
    bases.push_back(apply_step(chain[i], bases.back()));
  Tensor u = updated;
  Tensor detached;
  size_t expand_after = SIZE_MAX;  // the innermost expand step the update has yet to pass
  for (size_t i = chain.size(); i-- > first;)
    if (is_expand(chain[i])) {
      expand_after = i;
      break;
    }
  for (size_t i = chain.size(); i-- > first;) {
    const ViewStep& step = chain[i];
    if (step.detached != SIZE_MAX && !detached.defined()) {
      // The alias's new value is u unless the alias overlaps itself (an expand before it, no
      // select after): then u holds the update at some of an element's places only. Its value
      // then matters only as a history, which eager's backward cannot pass either: CopySlices
      // lays the alias's gradient out in its own, overlapping, geometry and raises.
      if (expand_after != SIZE_MAX && i > expand_after && i + 1 < chain.size() &&
          is_expanded(bases[i + 1 - first]) && autograd::grad_mode_enabled() &&
          requires_grad(graph::ValueId{updated.impl()->trace.value}))
        throw UnsupportedError(
            "an in-place op with grad on writes through a view of a detach()ed alias of an "
            "expanded view; eager's backward raises there (more than one element of the "
            "written-to tensor refers to a single memory location). Write under NoGradGuard, "
            "or into a clone().");
      detached = u;
    }
    if (is_expand(step)) {
      u = scatter_through_expand(chain, i, bases[i - first], updated);
      expand_after = SIZE_MAX;
      for (size_t e = i; e-- > first;)
        if (is_expand(chain[e])) {
          expand_after = e;
          break;
        }
      continue;
    }
    if (!step.op->view_scatter)
      throw UnsupportedError("an in-place op writes through a view made by " +
                             std::string(step.op->name) +
                             "; aot_function cannot write that view back into its base. Apply "
                             "the op to a clone() instead.");
    u = step.op->view_scatter(bases[i - first], u, step.args);
  }
  if (k != SIZE_MAX) return scatter_as_strided(chain, k, storage, rebase, u, detached);
  // Eager writes the root in place, so its strides never change; the scatters of t, transpose,
  // permute and squeeze are themselves views and leave the new value laid out as the written
  // view was. A view regenerated from that value and returned from the graph would then have
  // strides eager never gives (x.t().mul_(2); return x.t()). Intermediate roots are contiguous;
  // An input's root keeps its layout too (a transposed input, seeds 125116, 128523): a view of
  // its new value made after the write (view(-1) of the caller's row-major geometry) must find the
  // elements where eager's storage has them. So a dense root (contiguous, or a permutation of
  // contiguous) gets the new value laid out as it was: permute to storage order, clone, permute
  // back (the identity order needs the clone only).
  const Tensor& old_root = bases.front();
  std::optional<IntList> order;  // the root's dims, outermost first in its storage
  if (dense_order(old_root.sizes(), old_root.strides())) {
    // Ordered by stride alone (a stable sort), so that a contiguous root with dims of size 1
    // (whose strides address nothing) is the identity order and keeps its strides.
    order.emplace(old_root.sizes().size());
    std::iota(order->begin(), order->end(), int64_t{0});
    std::stable_sort(order->begin(), order->end(), [&](int64_t a, int64_t b) {
      return old_root.strides()[a] > old_root.strides()[b];
    });
  }
  const bool moved = u.strides() != old_root.strides() ||
                     (old_root.storage_offset() == 0 && u.storage_offset() != 0);
  if (order && moved) {
    const bool identity = std::is_sorted(order->begin(), order->end());
    IntList inverse(order->size());
    for (size_t d = 0; d < order->size(); ++d) inverse[(*order)[d]] = static_cast<int64_t>(d);
    if (!identity) u = permuted(u, *order);
    u = call_untracked("aten.clone.default", {u});
    if (!identity) u = permuted(u, inverse);
  } else if (moved && old_root.numel() > 0 &&
             kernels::is_non_overlapping(old_root.sizes(), old_root.strides())) {
    // A root with gaps between its elements (an input that is a select or slice of the caller's
    // tensor) keeps its exact strides too, from offset 0, so its views replayed from the new
    // value have eager's strides: t().view(-1) of a slice of a (3, 15)-strided [5, 6] input is
    // allowed in eager and was refused on a contiguous new value (AotProgramFuzz, seed 3325012).
    // The new value is laid into an image that spans the strides (image_of), then viewed.
    const IntList sizes = old_root.sizes(), strides = old_root.strides();
    u = call_untracked("aten.as_strided.default",
                       {image_of(u, sizes, strides), sizes, strides, int64_t{0}});
  }
  return {u, detached};
}

// The write through expand (chain step e, viewing `base`) and the steps after it, whose last view's
// new value is `updated`. The expanded tensor holds each of base's elements several times, so
// the new value of a view of it cannot be scattered back step by step (a select of one column
// leaves the other columns, the same memory, at their old values). Instead each element of the
// written view is mapped to the element of `base` it is: the same steps applied to the positions
// 0..numel-1 of `base`, and `updated` is put there (index_put). Eager allows a written view that
// overlaps itself only for fill_ and zero_, which write one value to every alias of an element,
// so the value put is the same whichever alias comes last.
Tensor Tracer::scatter_through_expand(const std::vector<ViewStep>& chain, size_t e,
                                      const Tensor& base, const Tensor& updated) {
  Tensor positions = arange(Scalar(base.numel())).view(base.sizes());
  for (size_t i = e; i < chain.size(); ++i) {
    ops::OpArgs args = chain[i].args;
    args[chain[i].op->view_of_arg()] = positions;
    positions = record(*chain[i].op, args, /*track=*/false).at(0);
  }
  const IntList flat{-1};
  return index_put(base.reshape(flat), {positions.reshape(flat)}, updated.reshape(flat))
      .view(base.sizes());
}

// The write through as_strided (chain step k) whose view's new value is `u`: the root with that
// step's window of its storage replaced by `u`. The window addresses the root's value directly
// where it is laid out as its storage; with `rebase`, it addresses the root's dims taken in
// storage order, from root_offset on (as_strided_needs_rebase checked it lies there), and the
// result is permuted back. `detached` is the new value of the last detach()ed alias after step k,
// if the scatter met one; a detach() before step k gets its new value here.
Tracer::Scattered Tracer::scatter_as_strided(const std::vector<ViewStep>& chain, size_t k,
                                             size_t storage, bool rebase, const Tensor& u,
                                             Tensor detached) {
  const ViewStep& step = chain[k];
  const graph::ValueId root = storages_[storage].root;
  const std::optional<IntList> order = storages_[storage].storage_order;
  const int64_t root_offset = storages_[storage].root_offset;
  auto window = [&](const Tensor& self) {
    if (rebase && !order) {
      // A gapped root: written in the image of its storage, then seen with its own geometry.
      const StorageState s = storages_[storage];
      Tensor written = call_untracked("aten.as_strided_scatter.default",
                                      {storage_copy(s, self), u, step.args[1], step.args[2],
                                       ops::int_arg(step.args, 3) - root_offset});
      return call_untracked("aten.as_strided.default",
                            {written, s.gapped_sizes, s.gapped_strides, int64_t{0}});
    }
    Tensor written = call_untracked(
        "aten.as_strided_scatter.default",
        {rebase ? permuted(self, *order) : self, u, step.args[1], step.args[2],
         rebase ? ops::Arg(ops::int_arg(step.args, 3) - root_offset) : step.args[3]});
    if (!rebase) return written;
    IntList back(order->size());
    for (size_t d = 0; d < order->size(); ++d) back[static_cast<size_t>((*order)[d])] = int64_t(d);
    return permuted(written, back);
  };
  Tensor new_root = window(bind(root, requires_grad(root)));
  const size_t j = last_detach_before(chain, k);
  if (j == SIZE_MAX || detached.defined() || !autograd::grad_mode_enabled())
    return {new_root, detached};
  // That alias takes the write's history and not the root's (functionalize_inplace): the same
  // window, written into the root's data with no history, seen through the steps up to it.
  if (detached_histories_[chain[j].detached] != graph::kNoValue)
    throw UnsupportedError(
        "an in-place op with grad on writes through as_strided of a detach()ed alias that an "
        "earlier write already gave a history; aot_function cannot yet combine the two. Write "
        "into a clone() of the alias instead.");
  const ops::OpDef& detach = ops::lookup("aten.detach.default");
  ops::OpArgs dargs{bind(root, requires_grad(root))};
  ops::normalize(detach, dargs);
  Tensor alias = window(record(detach, dargs, /*track=*/false).at(0));
  for (size_t i = 0; i < j; ++i) {
    if (chain[i].detached != SIZE_MAX) continue;  // it would drop the history being built
    ops::OpArgs vargs = chain[i].args;
    vargs[chain[i].op->view_of_arg()] = alias;
    alias = record(*chain[i].op, vargs, /*track=*/false).at(0);
  }
  return {new_root, alias};
}

}  // namespace aotgrad::trace
