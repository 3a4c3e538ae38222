#include "trace/tracer.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "aotgrad/autograd.h"
#include "aotgrad/memory_budget.h"
#include "autograd/grad_mode_scope.h"
#include "kernels/scatter.h"
#include "ops/effects.h"
#include "ops/inplace_view.h"
#include "ops/requires_grad.h"
#include "ops/tensor_constant.h"
#include "tensor/overlap.h"
#include "trace/decompose.h"
#include "trace/view_chain.h"

namespace aotgrad::trace {
namespace {

// A meta error prefixed with the op, unless the error already names it (errors raised below
// ops::dispatch name the current op themselves).
std::string naming_op(const ops::OpDef& op, const char* what) {
  std::string name(op.name);
  std::string_view message(what);
  if (message.substr(0, name.size() + 1) == name + ":") return std::string(message);
  return name + ": " + std::string(message);
}

Tensor fake_like(const ops::TensorMeta& m) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = m.dtype;
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  // The same offset as the value's: VJPs that read geometry (as_strided's) see where it starts.
  impl->storage_offset = m.storage_offset;
  int64_t extent = 1 + m.storage_offset;
  for (size_t d = 0; d < m.sizes.size(); ++d) extent += (m.sizes[d] - 1) * m.strides[d];
  impl->storage = std::make_shared<Storage>(std::max<int64_t>(extent, 0) * itemsize(m.dtype), true);
  return Tensor(std::move(impl));
}

// Whether result `i` of `op` aliases its viewed argument: every result of an op returning
// `Tensor(a)[]`, or a single `Tensor(a)` result.
bool result_is_view(const ops::OpDef& op, size_t i) {
  if (!op.is_view()) return false;
  const ops::Schema& s = op.parsed_schema();
  const std::string& set = s.args[op.view_of_arg()].alias_set;
  if (s.returns.size() == 1 && s.returns[0].type == ops::ArgType::tensor_list)
    return s.returns[0].alias_set == set;
  return i < s.returns.size() && s.returns[i].alias_set == set;
}

// The view step of piece `piece` of a multi-output view op, written as the single-output view
// that selects it: a slice along `dim` for split / split_with_sizes / chunk, a select for unbind.
// Replays and scatters of the piece then reuse slice's and select's rows (view_scatter), so the
// multi-output rows need no scatter rule of their own, and a piece regenerated at runtime is an
// ordinary view of its base.
ViewStep piece_step(const ops::OpDef& op, const ops::OpArgs& args, size_t piece,
                    const std::vector<ops::TensorMeta>& metas) {
  const Tensor& self = ops::tensor_arg(args, op.view_of_arg());
  int dim_arg = op.parsed_schema().find_arg("dim");
  if (dim_arg < 0)
    throw UnsupportedError(std::string(op.name) +
                           " returns several views and has no 'dim' "
                           "argument, so aot_function cannot follow its results as views; clone() "
                           "the results inside the function.");
  int64_t d = wrap_dim(ops::int_arg(args, static_cast<size_t>(dim_arg)), self.dim());
  const ops::TensorMeta& m = metas[piece];
  ViewStep step;
  step.grad_mode = autograd::grad_mode_enabled();
  step.piece_of = &op;
  step.piece_args = args;
  step.piece_args[op.view_of_arg()] = Tensor();
  step.piece = piece;
  if (static_cast<int64_t>(m.sizes.size()) + 1 == self.dim()) {
    step.op = &ops::lookup("aten.select.int");
    step.args = {Tensor(), d, static_cast<int64_t>(piece)};
  } else {
    int64_t start = 0;
    for (size_t j = 0; j < piece; ++j) start += metas[j].sizes[d];
    step.op = &ops::lookup("aten.slice.Tensor");
    step.args = {Tensor(), d, start, start + m.sizes[d], int64_t{1}};
  }
  ops::normalize(*step.op, step.args);
  ops::OpArgs check = step.args;
  check[0] = self;
  if (step.op->meta(check).at(0) != m)
    throw UnsupportedError(std::string(op.name) + ": result " + std::to_string(piece) +
                           " is not a slice or select of its input along dim " + std::to_string(d) +
                           ", so aot_function cannot follow it as a view; clone() the results "
                           "inside the function.");
  return step;
}

}  // namespace

bool Tracer::made_after_metadata_mutation(const TensorState& ts) const {
  // A write after it bumped the version again: eager's history is stale all the same.
  if (storages_[ts.storage].generation != ts.generation_made) return false;
  for (size_t k = metadata_touched_storages_.size(); k-- > 0;)
    if (metadata_touched_storages_[k] == ts.storage) return ts.metadata_ops_before > k;
  return false;
}

bool Tracer::made_before_metadata_mutation(const TensorState& ts) const {
  for (size_t k = ts.metadata_ops_before; k < metadata_touched_storages_.size(); ++k)
    if (metadata_touched_storages_[k] == ts.storage) return true;
  return false;
}

Tracer::MetadataTouch Tracer::metadata_touch(const Tensor& t) const {
  MetadataTouch m;
  for (const Touch& touch : metadata_touches_)
    if (touch.tensor == t.impl()) m = {true, m.under_grad || touch.grad_on, true};
  for (const auto& [tensor, sizes] : grad_reads_)
    if (tensor == t.impl()) m.grad_read_sizes.push_back(sizes);
  if (const TensorState* ts = state_of(t))
    for (size_t s : metadata_touched_storages_) m.storage_touched |= s == ts->storage;
  return m;
}

std::vector<Tracer::GeometryRun> Tracer::metadata_runs(const Tensor& t) const {
  return metadata_runs_in(t, 0, metadata_touches_.size());
}

std::vector<Tracer::GeometryRun> Tracer::metadata_runs_after_last_visible_write(
    const Tensor& t) const {
  auto it = last_visible_writes_.find(t.impl());
  return metadata_runs_in(t, it == last_visible_writes_.end() ? 0 : it->second.touches,
                          metadata_touches_.size());
}

std::vector<Tracer::GeometryRun> Tracer::metadata_runs_before_last_visible_write(
    const Tensor& t) const {
  auto it = last_visible_writes_.find(t.impl());
  return metadata_runs_in(t, 0, it == last_visible_writes_.end() ? 0 : it->second.touches);
}

std::vector<Tracer::GeometryRun> Tracer::metadata_runs_in(const Tensor& t, size_t first_touch,
                                                          size_t end_touch) const {
  std::vector<GeometryRun> runs;
  for (size_t k = first_touch; k < end_touch; ++k) {
    const Touch& touch = metadata_touches_[k];
    if (touch.tensor != t.impl()) continue;
    if (runs.empty() || runs.back().grad_on != touch.grad_on) runs.push_back({touch.grad_on, {}});
    runs.back().after = touch.after;
  }
  return runs;
}

std::optional<Tracer::Geometry> Tracer::geometry_at_last_visible_write(const Tensor& t) const {
  auto it = last_visible_writes_.find(t.impl());
  if (it == last_visible_writes_.end()) return std::nullopt;
  return it->second.geometry;
}

void Tracer::mark_requires_grad(graph::ValueId v, bool r) {
  if (requires_grad_.size() <= v.index) requires_grad_.resize(v.index + 1, false);
  requires_grad_[v.index] = r;
}

bool Tracer::requires_grad(graph::ValueId v) const {
  return v.index < requires_grad_.size() && requires_grad_[v.index];
}

const TensorState* Tracer::state_of(const Tensor& t) const {
  if (!traced_here(t) || t.impl()->trace.alias == UINT32_MAX) return nullptr;
  return &tensors_[t.impl()->trace.alias];
}

Tensor Tracer::bind(graph::ValueId v, bool requires_grad) {
  Tensor fake = fake_like(graph_.value(v).meta);
  fake.impl()->trace = TraceSlot{this, v.index};
  if (requires_grad) fake.impl()->autograd_meta().requires_grad = true;
  mark_requires_grad(v, requires_grad);
  return fake;
}

void Tracer::track_root(const Tensor& t, int input_index) {
  StorageState s;
  s.storage = t.storage();
  s.root = graph::ValueId{t.impl()->trace.value};
  s.first = s.root;
  s.input_index = input_index;
  // An op's result covers its own storage; as_strided addresses it as the value is laid out.
  s.root_is_storage = t.is_contiguous() && t.storage_offset() == 0;
  s.root_offset = t.storage_offset();
  s.storage_order = dense_order(t.sizes(), t.strides());
  if (!s.storage_order && t.numel() > 0 && kernels::is_non_overlapping(t.sizes(), t.strides())) {
    s.gapped_sizes = t.sizes();
    s.gapped_strides = t.strides();
  }
  storages_.push_back(std::move(s));
  TensorState ts;
  ts.storage = storages_.size() - 1;
  ts.keep = t.impl_ptr();
  tensors_.push_back(std::move(ts));
  t.impl()->trace.alias = static_cast<uint32_t>(tensors_.size() - 1);
}

void Tracer::track_view(const Tensor& view, const Tensor& parent, ViewStep step) {
  const TensorState& p = tensors_.at(parent.impl()->trace.alias);
  TensorState ts;
  ts.storage = p.storage;
  ts.chain = p.chain;
  ts.generation = p.generation;
  ts.hidden = p.hidden || !step.op->vjp;  // detach(): autograd does not see through it
  ts.chain.push_back(std::move(step));
  ts.keep = view.impl_ptr();
  ts.metadata_ops_before = metadata_touched_storages_.size();
  ts.generation_made = storages_[p.storage].generation;
  ts.reads_past_input = p.reads_past_input;
  ts.shared_writes_at_read = p.shared_writes_at_read;
  tensors_.push_back(std::move(ts));
  view.impl()->trace.alias = static_cast<uint32_t>(tensors_.size() - 1);
}

Tensor Tracer::add_input(const Tensor& example, std::string_view name_hint, Descriptor desc) {
  ops::TensorMeta m{example.dtype(), example.sizes(), example.strides(), example.storage_offset()};
  graph::ValueId v = graph_.add_input(name_hint, m, std::move(desc));
  Tensor fake = bind(v, example.requires_grad());
  // Same offset as the real input, so an as_strided inside the function means the same thing.
  fake.impl()->storage_offset = example.storage_offset();
  int index = static_cast<int>(input_is_leaf_requiring_grad_.size());
  input_is_leaf_requiring_grad_.push_back(example.requires_grad() && example.is_leaf());
  input_is_leaf_.push_back(example.is_leaf());
  if (example.requires_grad() && example.is_leaf()) {
    leaf_inputs_requiring_grad_.push_back(fake.impl());
    leaf_input_values_.push_back(v);
  }
  track_root(fake, index);
  storages_.back().root_is_storage =
      example.is_contiguous() && static_cast<int64_t>(example.storage()->nbytes() /
                                                      itemsize(example.dtype())) == example.numel();
  return fake;
}

Tensor Tracer::add_strided_view(const Tensor& base, const IntList& sizes, const IntList& strides,
                                int64_t storage_offset, bool requires_grad,
                                const std::optional<autograd::SpecialCreation>& creation) {
  const ops::OpDef& as_strided = ops::lookup("aten.as_strided.default");
  ops::OpArgs args{base, sizes, strides, storage_offset};
  ops::normalize(as_strided, args);
  Tensor view;
  {
    // Grad mode off only where it must be, for a view that does not require grad of a base that
    // does: the view step remembers the mode, and a view regenerated after a write that requires
    // grad (base.mul_(w)) must require grad as eager's does. A view made with grad off is marked
    // a no_grad view, which the creation below replaces. A view the caller made under no_grad is
    // recorded so too, and a piece of one: it requires grad (through its base, or its history),
    // but what is computed from it gives the base no gradient (bind_no_grad_views).
    const bool cut_off = creation && !creation->reaches_base;
    GradModeScope mode(!cut_off && (requires_grad || !base.requires_grad()));
    view = record(as_strided, args, /*track=*/true).at(0);
  }
  if (creation) {
    AutogradMeta& m = view.impl()->autograd_meta();
    m.view_creation = creation->creation;
    m.view_creation_version = creation->written ? UINT64_MAX : view.version();
    tensors_[view.impl()->trace.alias].history = creation->history;
  } else if (view.impl()->autograd) {
    view.impl()->autograd->view_creation = ViewCreation::normal;
  }
  return view;
}

void Tracer::note_caller_view(const Tensor& fake, bool is_view) {
  caller_views_.emplace_back(fake.impl(), is_view);
}

void Tracer::note_caller_creation(const Tensor& fake, const autograd::SpecialCreation& creation) {
  caller_creations_.push_back({fake.impl(), creation, fake.version()});
}

const Tracer::CallerCreation* Tracer::caller_creation(const Tensor& t) const {
  if (!t.defined() || caller_creations_.empty()) return nullptr;
  for (const CallerCreation& c : caller_creations_)
    if (c.fake == t.impl()) return &c;
  return nullptr;
}

bool Tracer::written_since_creation(const CallerCreation& c, const Tensor& fake) const {
  if (c.creation.written || fake.version() != c.version_at_call) return true;
  const TensorState* ts = state_of(fake);
  return ts && shared_writes(ts->storage) != 0;
}

std::optional<bool> Tracer::caller_view(const TensorImpl* t) const {
  std::optional<bool> is_view;
  for (const auto& [input, view] : caller_views_)
    if (input == t) is_view = view;
  return is_view;
}

void Tracer::note_caller_base(const Tensor& fake, size_t base) {
  if (const TensorState* ts = state_of(fake)) caller_base_of_storage_[ts->storage] = base;
}

void Tracer::note_shared_storage(const Tensor& fake, size_t group) {
  if (const TensorState* ts = state_of(fake)) shared_storage_group_[ts->storage] = group;
}

std::vector<size_t> Tracer::sharing_storage(size_t storage) const {
  std::vector<size_t> others;
  auto it = shared_storage_group_.find(storage);
  if (it == shared_storage_group_.end()) return others;
  for (const auto& [other, group] : shared_storage_group_)
    if (other != storage && group == it->second) others.push_back(other);
  return others;
}

uint64_t Tracer::shared_writes(size_t storage) const {
  uint64_t writes = 0;
  for (size_t other : sharing_storage(storage)) writes += storages_[other].generation;
  return writes;
}

// Found by reading df75624: inputs a0 and a1, rows 1 and 2 of one tensor, each its own graph
// input; w = a0.as_strided past a0, then a1 written, then w read. Eager's write moved the version
// of the caller's whole storage, so w is regenerated from the caller's tensor: a1's new elements
// in it, its gradient reaching the caller's tensor's. The graph's w kept the elements and the
// gradient it was made with.
void Tracer::check_shared_write_since_read(const TensorState& ts) const {
  if (!ts.reads_past_input || shared_writes(ts.storage) == ts.shared_writes_at_read) return;
  int written = -1;
  for (size_t other : sharing_storage(ts.storage))
    if (storages_[other].generation != 0) written = storages_[other].input_index;
  throw UnsupportedError(
      "a view made by aten.as_strided.default of input " +
      std::to_string(storages_[ts.storage].input_index) +
      " reaches storage elements outside it, and input " + std::to_string(written) +
      ", which shares the caller's storage, was written after the view was made: eager "
      "regenerates the view from the caller's tensor with that write in it, which the compiled "
      "function does not hold. Make the view after the write, or pass the tensor both view.");
}

// AotProgramFuzz, seed 3454842: inputs a0 and a3, disjoint views of one tensor, a3 written, then
// an as_strided of a0 reaching a3's elements read them from the caller's storage, which the
// epilogue writes only after the graph ran: eager's read saw the write.
void Tracer::check_read_in_place_after_shared_write(size_t storage) const {
  for (size_t other : sharing_storage(storage))
    if (storages_[other].generation != 0)
      throw UnsupportedError(
          "aten.as_strided.default on input " + std::to_string(storages_[storage].input_index) +
          " reads its caller's storage in place after input " +
          std::to_string(storages_[other].input_index) +
          ", which shares that storage, was written: the compiled function writes that input "
          "back only after the call, so the read would miss the write. Pass the tensor both "
          "view instead, or read through slice/select/view.");
}

bool Tracer::caller_base_has_history(size_t storage) const {
  auto it = caller_base_of_storage_.find(storage);
  return it != caller_base_of_storage_.end() && caller_bases_with_history_.count(it->second);
}

graph::ValueId Tracer::value_of(const Tensor& t, const std::string& what) {
  if (!t.defined()) throw std::invalid_argument(what + " is an undefined Tensor");
  if (t.impl()->trace.owner != this) {
    if (!t.is_fake()) return value_of(lift(t), what);
    throw std::invalid_argument(
        what +
        " is a traced tensor of another trace (a value kept from an earlier call of a "
        "traced function). Pass it to the function as an argument.");
  }
  // Under no_grad the view's regenerated history is never used.
  if (auto it = stale_input_views_.find(t.impl()->trace.alias);
      it != stale_input_views_.end() && autograd::grad_mode_enabled())
    throw UnsupportedError(it->second);
  if (t.impl()->trace.alias != UINT32_MAX)
    check_shared_write_since_read(tensors_[t.impl()->trace.alias]);
  sync(t);
  return graph::ValueId{t.impl()->trace.value};
}

// ---- real tensors: literals the function built from data ----

Tensor Tracer::lift(const Tensor& real) {
  auto it = lifted_.find(real.impl());
  if (it != lifted_.end()) {
    if (it->second.real.lock().get() == real.impl()) {
      if (real.requires_grad() && !it->second.fake.requires_grad())
        make_interior_leaf(it->second.fake);
      return it->second.fake;
    }
    lifted_.erase(it);  // that tensor died and a new one took its address
  }
  if (real.numel() > ops::kMaxConstantElements)
    throw UnsupportedError("the function uses a " + std::string(dtype_name(real.dtype())) +
                           shape_to_string(real.sizes()) +
                           " tensor it did not receive as an input; aot_function "
                           "writes such tensors into the graph as constants, up to " +
                           std::to_string(ops::kMaxConstantElements) +
                           " elements. Pass it as an argument.");
  const ops::OpDef& op = ops::lookup("aotgrad.tensor_constant.default");
  ops::OpArgs args = ops::tensor_constant_args(real);
  ops::normalize(op, args);
  Tensor fake = record(op, args, /*track=*/true).at(0);
  graph_.value(graph::ValueId{fake.impl()->trace.value}).name =
      graph_.fresh_name("_tensor_constant");
  lifted_[real.impl()] = Lifted{real.impl_ptr(), fake};
  if (real.requires_grad()) make_interior_leaf(fake);
  return fake;
}

void Tracer::lift_real_tensors(ops::OpArgs& args) {
  auto lift_one = [&](Tensor& t) {
    if (t.defined() && t.impl()->trace.owner != this && !t.is_fake()) t = lift(t);
  };
  for (ops::Arg& a : args) {
    if (auto* t = std::get_if<Tensor>(&a))
      lift_one(*t);
    else if (auto* l = std::get_if<ops::TensorList>(&a))
      for (Tensor& e : *l) lift_one(e);
  }
}

void Tracer::substitute(const Tensor& real, const Tensor& fake) {
  if (!real.defined() || real.is_fake() || !traced_here(fake)) return;
  lifted_[real.impl()] = Lifted{real.impl_ptr(), fake, /*substituted=*/true};
}

Tensor Tracer::traced_form(const Tensor& t) const {
  if (!t.defined() || traced_here(t) || t.is_fake()) return t;
  auto it = lifted_.find(t.impl());
  return it != lifted_.end() && it->second.real.lock().get() == t.impl() ? it->second.fake : t;
}

std::string Tracer::captured_constant() const {
  for (const auto& [impl, lifted] : lifted_)
    if (auto real = lifted.real.lock(); real && !lifted.substituted)
      return "a " + std::string(dtype_name(real->dtype)) + shape_to_string(real->sizes) +
             " tensor" +
             (real->autograd && real->autograd->requires_grad ? " that requires grad" : "");
  return "";
}

graph::NodeArg Tracer::to_node_arg(const ops::OpDef& op, const ops::Arg& a, size_t index) {
  auto what = [&](size_t k) {
    return std::string(op.name) + " argument " + std::to_string(index) +
           (k == SIZE_MAX ? "" : " element " + std::to_string(k));
  };
  return std::visit(
      [&](const auto& x) -> graph::NodeArg {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          if (!x.defined()) return std::monostate{};
          return value_of(x, what(SIZE_MAX));
        } else if constexpr (std::is_same_v<T, ops::TensorList>) {
          graph::ValueList l;
          for (size_t k = 0; k < x.size(); ++k)
            l.push_back(x[k].defined() ? value_of(x[k], what(k)) : graph::kNoValue);
          return l;
        } else {
          return x;
        }
      },
      a);
}

std::vector<double> Tracer::node_budgets() const {
  std::vector<double> out = node_budgets_;
  out.resize(graph_.nodes().size(), std::numeric_limits<double>::quiet_NaN());
  return out;
}

// ---- recording ----

std::vector<Tensor> Tracer::call(const ops::OpDef& op, ops::OpArgs& args) {
  if (const DecompositionFn* d = decomposition_for(op)) return run_decomposition(op, *d, args);
  lift_real_tensors(args);
  check_view_rules(op, args);
  sync_args(args);
  bind_no_grad_views(op, args);
  note_grad_reads(op, args);
  if (ops::is_effectful(op)) return thread_effect(op, args);
  if (op.recompute == ops::Recompute::random)
    if (std::optional<std::vector<Tensor>> r = functionalize_random(op, args)) return std::move(*r);
  if (op.is_inplace() && ops::mutates_metadata_only(op)) return functionalize_metadata(op, args);
  if (op.is_inplace()) return functionalize_inplace(op, args);
  return record(op, args, /*track=*/true);
}

std::vector<Tensor> Tracer::record(const ops::OpDef& op, ops::OpArgs& args, bool track) {
  // as_strided of a root that is not laid out as its storage reads the root's elements
  // (rebased_as_strided), where it can; the view it makes keeps eager's geometry.
  std::optional<ViewStep> rebased;
  std::optional<graph::ValueId> in_place_base;
  std::optional<int64_t> absolute_offset;  // where in_place_base starts at offset 0
  bool reads_past = false;  // the window is read in the caller's storage (reads_past_input)
  auto checked_meta = [&] {
    try {
      return op.meta(args);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(naming_op(op, e.what()));
    }
  };
  std::optional<std::vector<ops::TensorMeta>> as_strided_metas;
  if (op.name == "aten.as_strided.default") {
    const Tensor& base = ops::tensor_arg(args, 0);
    if (traced_here(base) && base.impl()->trace.alias != UINT32_MAX) {
      // Eager's checks of the window first: the rebasing below reads its strides by its sizes
      // (window_within) and sizes the storage image by it.
      as_strided_metas = checked_meta();
      const TensorState& ts = tensors_[base.impl()->trace.alias];
      ViewStep step{&op, args, autograd::grad_mode_enabled()};
      if (ops::is_none(step.args, 3)) step.args[3] = base.storage_offset();
      // On the root itself, or within the elements of a view of it that autograd sees through
      // (no detach(), made with grad on), the window's gradient reaches the same
      // elements whether it goes through the view or straight to the root.
      bool seen_through = true;
      for (const ViewStep& v : ts.chain)
        seen_through = seen_through && v.grad_mode && v.detached == SIZE_MAX;
      auto window_in_base = [&] {
        if (dense_order(base.sizes(), base.strides()))
          return window_within(step, base.storage_offset(), base.numel());
        return kernels::is_non_overlapping(base.sizes(), base.strides()) &&
               window_within_positions(step, base.storage_offset(), base.sizes(), base.strides());
      };
      bool on_root = ts.chain.empty() || (seen_through && window_in_base());
      // arg 0 may not go through value_of below (in_place_base): its checks first.
      value_of(base, "aten.as_strided.default argument 'self'");
      const StorageState& s = storages_[ts.storage];
      reads_past = !(s.root_offset == 0 && s.root_is_storage);
      if (std::optional<graph::ValueId> image = image_past_written_input(ts, base, step, on_root)) {
        in_place_base = image;
        absolute_offset = ops::int_arg(step.args, 3);
      } else if (!on_root) {
        check_as_strided(ts.storage);
        in_place_base = in_place_view(ts);
      } else if (as_strided_needs_rebase(storages_[ts.storage], step, /*writing=*/false, true)) {
        rebased = std::move(step);
        reads_past = false;  // within the input's own elements
      }
    }
  }
  std::vector<graph::NodeArg> node_args;
  bool any_requires_grad = false;
  for (size_t i = 0; i < args.size(); ++i) {
    node_args.push_back(i == 0 && in_place_base ? graph::NodeArg{*in_place_base}
                                                : to_node_arg(op, args[i], i));
    for (graph::ValueId v : graph::arg_values(node_args.back()))
      any_requires_grad = any_requires_grad || requires_grad(v);
  }
  if (absolute_offset) node_args[3] = *absolute_offset;
  std::vector<ops::TensorMeta> metas =
      as_strided_metas ? std::move(*as_strided_metas) : checked_meta();
  std::vector<ops::TensorMeta> node_metas = metas;
  if (rebased) {
    const StorageState& s =
        storages_[tensors_[ops::tensor_arg(args, 0).impl()->trace.alias].storage];
    Tensor copy = storage_copy(s, bind(s.root, requires_grad(s.root)));
    node_args[0] = graph::ValueId{copy.impl()->trace.value};
    node_metas[0].storage_offset = ops::int_arg(rebased->args, 3) - s.root_offset;
    node_args[3] = node_metas[0].storage_offset;
  }
  std::vector<graph::ValueId> outs = graph_.add_node(op, std::move(node_args), node_metas);
  if (std::optional<double> budget = current_memory_budget()) {
    node_budgets_.resize(graph_.nodes().size(), std::numeric_limits<double>::quiet_NaN());
    node_budgets_.back() = *budget;
  }
  bool grad_tracked = any_requires_grad && op.vjp && autograd::grad_mode_enabled();
  std::vector<Tensor> results;
  bool multi_output_view = op.is_view() && result_is_view(op, 1);
  for (size_t i = 0; i < outs.size(); ++i) {
    bool r = ops::result_requires_grad(op, autograd::grad_mode_enabled(), any_requires_grad,
                                       metas[i].dtype);
    Tensor out;
    if (result_is_view(op, i)) {
      const Tensor& base = ops::tensor_arg(args, op.view_of_arg());
      out = make_view(base, metas[i].sizes, metas[i].strides, metas[i].storage_offset);
      out.impl()->trace = TraceSlot{this, outs[i].index};
      mark_requires_grad(outs[i], r);
      if (r) out.impl()->autograd_meta().requires_grad = true;
      // Eager's detach() result has no _base, so no view creation either: made under no_grad,
      // it may still be written in place with grad on. (detach is the one view row without a
      // VJP.)
      if (op.vjp) {
        autograd::record_view_creation(out, base, multi_output_view);
        // Of an input the caller made specially (the fake is no view): what eager's view of
        // that view inherits.
        if (const CallerCreation* c = caller_creation(base);
            c && autograd::grad_mode_enabled() && !multi_output_view) {
          AutogradMeta& m = out.impl()->autograd_meta();
          m.view_creation = c->creation.creation;
          m.view_creation_version = out.version();
        }
      }
      if (track && base.impl()->trace.alias != UINT32_MAX) {
        ViewStep step{&op, args, autograd::grad_mode_enabled()};
        step.args[op.view_of_arg()] = Tensor();
        // None means the offset of the tensor it was applied to; replays apply the step to the
        // root (replay), so it is spelled out.
        if (is_as_strided(step) && ops::is_none(step.args, 3)) step.args[3] = base.storage_offset();
        if (multi_output_view) {
          step = piece_step(op, args, i, metas);
          step.piece_group = graph_.nodes().size() - 1;
        }
        if (!op.vjp) {  // detach()
          step.detached = detached_histories_.size();
          detached_histories_.push_back(graph::kNoValue);
        }
        track_view(out, base, std::move(step));
        tensors_.back().history = {r, autograd::pytorch_node_name(op.name),
                                   static_cast<uint32_t>(i)};
        if (reads_past) {
          tensors_.back().reads_past_input = true;
          tensors_.back().shared_writes_at_read = shared_writes(tensors_.back().storage);
        }
      }
    } else {
      out = bind(outs[i], r);
      if (track) track_root(out, -1);
    }
    results.push_back(out);
  }
  if (track && grad_tracked) note_saved(op, args, results);
  if (grad_tracked)
    for (InteriorLeaf& leaf : interior_leaves_)
      for (const graph::NodeArg& a : graph_.nodes().back().args)
        for (graph::ValueId v : graph::arg_values(a))
          if (v == leaf.value && leaf.requires_grad) leaf.used_with_grad = true;
  return results;
}

// Remembers which storages a VJP will read, so a later mutation of them can be reported the way
// eager autograd's version check would report it.
void Tracer::note_saved(const ops::OpDef& op, const ops::OpArgs& args,
                        const std::vector<Tensor>& outs) {
  auto note = [&](const Tensor& t, const std::string& what) {
    if (!traced_here(t) || t.impl()->trace.alias == UINT32_MAX) return;
    size_t s = tensors_[t.impl()->trace.alias].storage;
    saved_uses_.push_back({s, storages_[s].generation, what + " of " + std::string(op.name),
                           graph_.nodes().size() - 1});
  };
  // Eager saves an input only when a gradient that reads it has an edge to follow, not when each
  // input is a view made under no_grad (autograd::OpNode's constructor, SaveMask::inputs_for, as
  // PyTorch's should_compute_output).
  auto has_edge = [&](const Tensor& t) {
    return t.defined() && traced_here(t) && requires_grad(graph::ValueId{t.impl()->trace.value}) &&
           !is_dropped_grad_view(t);
  };
  uint32_t wanted = 0;  // bit j: argument j (a tensor, or some element of a list) has an edge
  for (size_t i = 0; i < args.size() && i < 32; ++i) {
    bool edge = false;
    if (auto* t = std::get_if<Tensor>(&args[i])) edge = has_edge(*t);
    if (auto* l = std::get_if<ops::TensorList>(&args[i]))
      for (const Tensor& t : *l) edge = edge || has_edge(t);
    if (edge) wanted |= ops::bit(i);
  }
  const uint32_t saved = op.saves.inputs_for(wanted);
  for (size_t i = 0; i < args.size() && i < 32; ++i)
    if (saved & ops::bit(i))
      if (auto* t = std::get_if<Tensor>(&args[i]); t && t->defined())
        note(*t, "input " + std::to_string(i));
  for (size_t i = 0; i < outs.size() && i < 32; ++i)
    if (op.saves.outputs & ops::bit(i)) note(outs[i], "output " + std::to_string(i));
}

// Eager bumps the storage's version counter on every in-place op (metadata ones too), so a value
// a VJP saved from it before would fail backward's version check.
void Tracer::note_saved_modified(const ops::OpDef& op, size_t storage) {
  // Inputs that share the caller's storage through graph inputs of their own share eager's
  // version counter too: a write to one invalidates what was saved from another.
  const std::vector<size_t> shared = sharing_storage(storage);
  for (const SavedUse& use : saved_uses_)
    if ((use.storage == storage ||
         std::find(shared.begin(), shared.end(), use.storage) != shared.end()) &&
        use.generation == storages_[use.storage].generation)
      backward_errors_.push_back(
          {use.node,
           "one of the variables needed for gradient computation has been modified by an inplace "
           "operation: " +
               use.what + " was modified by " + std::string(op.name) +
               " inside the compiled function. Clone it before modifying it."});
}

// Eager's leaf checks (autograd/eager.cpp): a leaf that requires grad is an input that was one
// at the call, or a tensor made one inside the function (interior_leaves_).
void Tracer::check_leaf_mutation(const ops::OpDef& op, const TensorState& ts, bool hidden,
                                 graph::ValueId self_value) const {
  if (hidden) return;
  const StorageState& s = storages_[ts.storage];
  auto interior = [&](graph::ValueId v) {
    for (const InteriorLeaf& l : interior_leaves_)
      if (l.value == v && l.requires_grad) return true;
    return false;
  };
  bool input_leaf = s.input_index >= 0 && input_is_leaf_requiring_grad_[s.input_index];
  std::string where = s.input_index >= 0 ? "input " + std::to_string(s.input_index)
                                         : "a tensor made a leaf inside the function";
  if (ts.chain.empty() && (input_leaf || interior(self_value)))
    throw std::runtime_error(
        "a leaf Variable that requires grad is being used in an in-place "
        "operation (" +
        std::string(op.name) + " on " + where +
        "). Wrap the update in NoGradGuard, or clone() the tensor first.");
  if (!ts.chain.empty() && (input_leaf || interior(s.root) || interior(self_value)))
    throw std::runtime_error(
        "a view of a leaf Variable that requires grad is being used in an "
        "in-place operation (" +
        std::string(op.name) + " on a view of " + where +
        "). Clone the leaf first, or update it under NoGradGuard.");
}

std::vector<Tensor> Tracer::functionalize_inplace(const ops::OpDef& op, ops::OpArgs& args) {
  Tensor self = ops::tensor_arg(args, op.mutated_arg());
  value_of(self, std::string(op.name) + " argument 'self'");
  if (self.impl()->trace.alias == UINT32_MAX)
    throw std::logic_error(std::string(op.name) + ": in-place op on an untracked traced tensor");
  if (op.functional_variant.empty())
    throw std::logic_error(std::string(op.name) + " has no functional variant in the op table");
  size_t state_index = self.impl()->trace.alias;
  bool grad_on = autograd::grad_mode_enabled();
  bool hidden = !grad_on || tensors_[state_index].hidden;
  check_leaf_mutation(op, tensors_[state_index], hidden, graph::ValueId{self.impl()->trace.value});
  // Where no argument and not the storage require grad, eager makes no CopySlices at all.
  auto any_requires_grad = [&] {
    if (requires_grad(storages_[tensors_[state_index].storage].root)) return true;
    for (const ops::Arg& a : args)
      if (const auto* t = std::get_if<Tensor>(&a); t && t->defined() && t->requires_grad())
        return true;
    return false;
  };
  if (auto it = inputs_changed_under_views_.find(tensors_[state_index].storage);
      !hidden && it != inputs_changed_under_views_.end() && any_requires_grad())
    throw UnsupportedError(
        std::string(op.name) + " writes with grad on to input " + std::to_string(it->second) +
        ", whose geometry changed in place under no_grad while a view of it made before was "
        "alive: eager's CopySlices of that view passes the unwritten gradient to the input's "
        "node in the new geometry, which aot_function does not model. Make the view after the "
        "change, or change the geometry before the call.");
  op.meta(args);  // the in-place row's own checks (an expanded self, ...), with eager's errors

  const ops::OpDef& functional = ops::lookup(op.functional_variant);
  ops::OpArgs fargs = args;
  ops::normalize(functional, fargs);
  // Eager's CopySlices passes the gradient of the written view's old value straight to the
  // base's window: as_strided of the root, however the view was made (its other reads, as
  // another argument, keep the view's own history). They differ where an as_strided reaches
  // past the view it was applied to (AotProgramFuzz, seed 301038).
  if (const TensorState& ts = tensors_[state_index];
      rebased_chain(ts.chain, ts.chain.size()).size() != ts.chain.size() && grad_on && !hidden) {
    std::vector<ViewStep> chain = ts.chain;
    fargs[op.mutated_arg()] = replay(storages_[ts.storage], chain, chain.size());
  }
  Tensor updated = record(functional, fargs, /*track=*/false).at(0);
  if (updated.sizes() != self.sizes())
    throw std::invalid_argument(
        std::string(op.name) + ": result of shape " + shape_to_string(updated.sizes()) +
        " cannot be written into self of shape " + shape_to_string(self.sizes()));
  if (updated.dtype() != self.dtype()) {
    const ops::OpDef& to_copy = ops::lookup("aten._to_copy.default");
    ops::OpArgs cargs{updated};
    ops::normalize(to_copy, cargs);
    cargs[to_copy.parsed_schema().find_arg("dtype")] = self.dtype();
    updated = record(to_copy, cargs, /*track=*/false).at(0);
  }
  // Written through an expanded view (fill_ and zero_ may) with a history: eager's CopySlices
  // raises when backward reaches it (autograd/nodes.cpp), which the graph cannot do at that point.
  if (grad_on && requires_grad(graph::ValueId{updated.impl()->trace.value}) && is_expanded(self))
    throw UnsupportedError(
        std::string(op.name) +
        " with grad on writes through an expanded view of a tensor that requires grad; "
        "eager's backward raises there (more than one element of the written-to tensor "
        "refers to a single memory location). Write under NoGradGuard, or into a clone().");
  Scattered scattered = scatter_into_root(state_index, updated);
  Tensor new_root = scattered.root;
  StorageState& s = storages_[tensors_[state_index].storage];
  if (hidden && requires_grad(s.root)) {
    // Autograd must keep seeing the old value's history (eager records nothing for this write).
    EnableGradGuard grad;
    ops::OpArgs hargs{bind(s.root, true), new_root};
    new_root = record(ops::lookup("aotgrad.hidden_update.default"), hargs, /*track=*/false).at(0);
  } else if (hidden && requires_grad(graph::ValueId{new_root.impl()->trace.value})) {
    // Written through a detach()ed alias by a tensor that requires grad: the alias gets that
    // history (below), the root, which had none, still has none.
    const ops::OpDef& detach = ops::lookup("aten.detach.default");
    ops::OpArgs dargs{new_root};
    ops::normalize(detach, dargs);
    new_root = record(detach, dargs, /*track=*/false).at(0);
  }
  if (grad_on && scattered.detached.defined()) {
    // Eager records the write on the detached alias (its grad_fn, and its views'), which is no
    // view of the root as far as autograd knows.
    graph::ValueId v{scattered.detached.impl()->trace.value};
    size_t last = SIZE_MAX;
    for (const ViewStep& step : tensors_[state_index].chain)
      if (step.detached != SIZE_MAX) last = step.detached;
    detached_histories_[last] = requires_grad(v) ? v : graph::kNoValue;
  }
  note_saved_modified(op, tensors_[state_index].storage);
  self.storage()->bump_version();  // as eager: special views (view_creation.h) compare it
  s.root = graph::ValueId{new_root.impl()->trace.value};
  if (auto it = caller_base_of_storage_.find(tensors_[state_index].storage);
      it != caller_base_of_storage_.end() && !hidden && requires_grad(s.root))
    caller_bases_with_history_.insert(it->second);
  // Written with grad on, the new root carries the geometry_update of the tensors it was
  // written through: replays from it must not pass the gradient through it a second time.
  if (!hidden)
    for (TensorState& other : tensors_)
      if (other.storage == tensors_[state_index].storage)
        for (ViewStep& step : other.chain) step.geometry = SIZE_MAX;
  ++s.generation;
  if (!hidden)
    std::erase_if(no_grad_origins_, [&](const auto& entry) {
      return entry.second.storage == tensors_[state_index].storage;
    });
  if (!hidden)
    for (const Touch& touch : metadata_touches_)
      if (touch.storage == tensors_[state_index].storage)
        last_visible_writes_[touch.tensor] = {
            {touch.tensor->sizes, touch.tensor->strides, touch.tensor->storage_offset},
            metadata_touches_.size()};
  s.mutated = true;
  s.all_mutations_under_no_grad = s.all_mutations_under_no_grad && !grad_on;
  s.all_mutations_hidden = s.all_mutations_hidden && hidden;
  sync(self);
  return {self};
}

// The views made earlier of a tensor whose geometry `updated` (a tracked state whose last step
// took it under no_grad) now is: eager regenerates their history at their next use, the
// version having moved, as an as_strided of that tensor with the view's geometry, whose
// gradient is laid out in the new geometry and reaches the tensor's node as it is. A view made
// under no_grad or by a multi-output op, or through a detach(), is left as it was.
std::vector<size_t> Tracer::views_made_before(size_t updated) const {
  std::vector<size_t> views;
  const size_t storage = tensors_[updated].storage;
  for (size_t i = 0; i < updated; ++i) {
    const TensorState& other = tensors_[i];
    if (other.storage != storage || other.chain.empty() || other.hidden) continue;
    const std::shared_ptr<TensorImpl>& view = other.keep;
    if (!view || view->trace.alias != i) continue;
    // A caller's tensor that is no view in eager (a member of a synthetic base) is none.
    if (caller_view(view.get()) == false) continue;
    bool plain = true;
    for (const ViewStep& step : other.chain)
      plain = plain && step.grad_mode && !step.piece_of && step.detached == SIZE_MAX;
    if (plain) views.push_back(i);
  }
  return views;
}

// An input's views (`mark` set): the geometry step of their chain is marked instead of the
// input's, whose returned views the runtime regenerates from the caller's tensor.
void Tracer::regenerate_views_of_changed_geometry(size_t updated, size_t mark) {
  for (size_t i : views_made_before(updated)) {
    TensorState& other = tensors_[i];
    const std::shared_ptr<TensorImpl>& view = other.keep;
    const ops::OpDef& as_strided = ops::lookup("aten.as_strided.default");
    ViewStep step{&as_strided,
                  {Tensor(), view->sizes, view->strides, view->storage_offset},
                  /*grad_mode=*/true};
    ops::normalize(as_strided, step.args);
    other.chain = tensors_[updated].chain;
    if (mark != SIZE_MAX) other.chain.back().geometry = mark;
    other.chain.push_back(std::move(step));
    other.generation = UINT64_MAX;
  }
}

// t_, transpose_, unsqueeze_, squeeze_, as_strided_ on a traced tensor: `self` becomes the view
// its functional variant makes of it. Its TensorImpl takes the view's geometry, graph value and
// view chain, so every handle of it sees the change, later reads and writes go through the new
// chain, and capture compares each input's final geometry with the caller's to find metadata
// mutations. The data of the storage does not change: no scatter, no generation bump.
std::vector<Tensor> Tracer::functionalize_metadata(const ops::OpDef& op, ops::OpArgs& args) {
  Tensor self = ops::tensor_arg(args, op.mutated_arg());
  value_of(self, std::string(op.name) + " argument 'self'");
  if (self.impl()->trace.alias == UINT32_MAX)
    throw std::logic_error(std::string(op.name) + ": in-place op on an untracked traced tensor");
  bool grad_on = autograd::grad_mode_enabled();
  const TensorState& ts = tensors_[self.impl()->trace.alias];
  check_leaf_mutation(op, ts, !grad_on || ts.hidden, graph::ValueId{self.impl()->trace.value});
  const bool self_is_root = ts.chain.empty();
  // Eager's detach() result, or that tensor after an earlier such op, is no view.
  const bool plain =
      !ts.chain.empty() && (ts.chain.back().detached != SIZE_MAX || ts.chain.back().plain);
  const size_t ts_storage = ts.storage;
  note_saved_modified(op, ts.storage);
  metadata_touched_storages_.push_back(ts.storage);
  // Eager bumps the version counter, so it regenerates the history of every view of the
  // storage before its next use: a view made through as_strided becomes as_strided of the root
  // (sync), though the data did not change (AotProgramFuzz, seed 307529). Not the tensor changed
  // with grad on: autograd records the op on its history, which stays current (seed 1228730: an
  // as_strided reaching past a select, then unsqueeze_ of it, passed the element outside the
  // select a gradient).
  const size_t self_state = self.impl()->trace.alias;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    TensorState& other = tensors_[i];
    if (grad_on && i == self_state) continue;
    if (other.storage == ts.storage && last_as_strided(other.chain, other.chain.size()) != SIZE_MAX)
      other.generation = UINT64_MAX;
  }
  self.storage()->bump_version();
  const ops::OpDef& view = ops::lookup(op.functional_variant);
  ops::OpArgs vargs = args;
  ops::normalize(view, vargs);
  Tensor v;
  {
    // Recorded with grad on whatever the mode: the tensor keeps its autograd identity (a leaf
    // stays that leaf), so its new value must still carry gradient to the old one.
    GradModeScope mode(true);
    try {
      v = record(view, vargs, /*track=*/true).at(0);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(naming_op(op, e.what()));
    }
  }
  if (plain) tensors_[v.impl()->trace.alias].chain.back().plain = true;
  uint32_t value = v.impl()->trace.value;
  const std::optional<bool> caller = caller_view(self.impl());
  const bool eager_view = caller.value_or(self.is_view());
  // The tensor eager's views of this storage have as their _base: the input's root, or a
  // caller's tensor that is no view but a member of a synthetic base with views of it (inputs
  // r1 and r1.view(9); AotProgramFuzz, seed 3225134).
  const bool eager_base = self_is_root || caller == false;
  graph::ValueId old{self.impl()->trace.value};
  if (auto it = geometry_origins_.find(old.index); it != geometry_origins_.end()) old = it->second;
  // Changed under no_grad before and written under no_grad since (a write eager does not record
  // either): the tensor read again after the write is a new value, but eager's node is the one
  // of the first change's origin still (t_, add_, t_, all under no_grad: the gradient of the
  // final geometry reaches the input's node as it is).
  if (auto it = no_grad_origins_.find(self.impl()); it != no_grad_origins_.end()) {
    if (grad_on)
      no_grad_origins_.erase(it);
    else
      old = it->second.value;
  }
  if (!grad_on && requires_grad(old) && !eager_view) {
    // Eager records nothing under no_grad: the tensor keeps its node, which receives the
    // gradient of the new geometry as it is, not mapped back through the view (seeds 105659,
    // 112645, 138178, 503244). A view's history is regenerated instead (its version moved): an
    // as_strided of its base with the new geometry, which the view's own VJP already is (seed
    // 304718: a view passed as an input, whose fake is a graph input's root). Changed again,
    // the gradient is still fitted to the shape of the value the node was made for (704750).
    EnableGradGuard grad;
    ops::OpArgs gargs = geometry_update_args(old, v);
    value = record(ops::lookup("aotgrad.geometry_update.default"), gargs, /*track=*/false)
                .at(0)
                .impl()
                ->trace.value;
    geometry_origins_[value] = old;
    no_grad_origins_[self.impl()] = {old, ts_storage};
    // Views of it made later, and its replays after writes, start from that history too
    // (AotProgramFuzz, seed 836425: select of it returned twice, regenerated at run time).
    // An input's views are left as they were: the runtime regenerates its returned views from
    // the caller's tensor, given its new geometry in eager (MetadataMutations), a leaf's changed
    // geometry is refused or kept by no other input (capture.cpp), and a non-leaf input's
    // regenerated as_strided would address the copy the runtime may pass of it, not its storage.
    // (Marked, a returned view of a leaf took a history of its own, which needs the training
    // graph, whose check refuses such a leaf: ScenarioModes.ViewMadeAfterAGeometryChanged*.)
    const size_t updated = v.impl()->trace.alias;
    const bool input = storages_[ts_storage].input_index >= 0;
    // An input's own chain is marked too, sizes kept: read again from its root after a write
    // under no_grad, its value still takes the gradient as it is (AotProgramFuzz, seeds 1516068:
    // t_, fill_ under no_grad, then tanh_ with grad on gave a non-leaf input's node a transposed
    // gradient; 926919: a leaf transposed and written under no_grad, refused before). A
    // non-leaf's is marked where the sizes changed too: eager's node, reached with the gradient
    // of the new sizes, raises in backward, and so does the geometry_update (t_ of a [3, 4]
    // input, add_, both under no_grad, then mul_: the replay passed the gradient back through
    // the transpose). A leaf's too: its AccumulateGrad takes the gradient of the new sizes
    // (geometry_update_args).
    tensors_[updated].chain.back().geometry = geometry_updates_.size();
    geometry_updates_.push_back(old);
    if (!input) {
      if (self_is_root) regenerate_views_of_changed_geometry(updated);
    } else if (eager_base && !views_made_before(updated).empty()) {
      // An input that is no view in eager: its views made before the change are regenerated
      // from its node as an intermediate's are (`u = x.select(0, 1)`, then x.t_() under
      // no_grad: u's gradient lands in column 1 of x's), the geometry step marked in their
      // chains (its returned views come from the caller's tensor, MetadataMutations). Where the
      // sizes changed, eager's backward through
      // such a view raises (the as_strided's gradient has the new sizes, the node the old):
      // refused where the view is used after the change (value_of).
      if (graph_.value(old).meta.sizes != v.sizes()) {
        for (size_t i : views_made_before(updated))
          stale_input_views_[i] =
              "input " + std::to_string(storages_[ts_storage].input_index) +
              " had its sizes changed in place under no_grad (" + std::string(op.name) +
              ") after a view of it was made, and the view is used after the change: eager's "
              "backward through that view raises (its regenerated history gives the input's "
              "node a gradient of the new sizes). Make the view after the change, or change the "
              "geometry before the call.";
      } else {
        geometry_updates_.push_back(old);
        regenerate_views_of_changed_geometry(updated, geometry_updates_.size() - 1);
      }
    }
  }
  if (!grad_on && !eager_view && eager_base && storages_[ts_storage].input_index >= 0 &&
      !views_made_before(v.impl()->trace.alias).empty())
    inputs_changed_under_views_.emplace(ts_storage, storages_[ts_storage].input_index);
  TensorImpl& impl = *self.impl();
  impl.sizes = v.sizes();
  impl.strides = v.strides();
  impl.storage_offset = v.storage_offset();
  impl.trace.value = value;
  impl.trace.alias = v.impl()->trace.alias;
  tensors_[impl.trace.alias].keep = self.impl_ptr();
  metadata_touches_.push_back(
      {&impl, grad_on, ts_storage, {impl.sizes, impl.strides, impl.storage_offset}});
  return {self};
}

}  // namespace aotgrad::trace
