#include "aot/guard_key.h"

#include <cstring>

#include "aotgrad/aot.h"
#include "autograd/nodes.h"

namespace aotgrad::aot {
namespace {

using aot_detail::append_u64;

void append_ints(std::string& key, const IntList& v) {
  append_u64(key, v.size());
  for (int64_t x : v) append_u64(key, static_cast<uint64_t>(x));
}

void append_indices(std::string& key, const std::vector<size_t>& v) {
  append_u64(key, v.size());
  for (size_t x : v) append_u64(key, x);
}

// The plan of most calls is trivial (every input its own graph input): one byte, since the
// number of inputs is already in the key. Any other plan is written out in full.
void append_plan(std::string& key, const InputPlan& plan) {
  if (plan.trivial() && plan.unmergeable.empty() && plan.same_base_as.empty()) {
    key += 'P';
    return;
  }
  key += 'F';
  append_u64(key, plan.inputs.size());
  for (const InputPlan::Entry& e : plan.inputs) {
    key += static_cast<char>(e.kind);
    append_u64(key, e.index);
  }
  append_u64(key, plan.bases.size());
  for (const SyntheticBase& b : plan.bases) {
    append_indices(key, b.members);
    key += b.common_base ? '1' : '0';
    append_ints(key, b.sizes);
    append_ints(key, b.strides);
    append_u64(key, static_cast<uint64_t>(b.storage_offset));
  }
  append_u64(key, plan.graph_inputs.size());
  for (const InputPlan::GraphInput& g : plan.graph_inputs) {
    key += g.is_base ? '1' : '0';
    append_u64(key, g.index);
  }
  append_u64(key, plan.unmergeable.size());
  for (const InputPlan::Unmergeable& u : plan.unmergeable) {
    append_indices(key, u.members);
    append_u64(key, u.reason.size());
    key += u.reason;
  }
  append_indices(key, plan.same_base_as);
}

void append_tensor(std::string& key, DType dtype, bool requires_grad, bool leaf, CallerView view,
                   const IntList& sizes, const IntList& strides, int64_t storage_offset) {
  key += static_cast<char>(dtype);
  key += !requires_grad ? 'n' : leaf ? 'l' : 'r';
  key += static_cast<char>('0' + static_cast<int>(view));
  append_ints(key, sizes);
  append_ints(key, strides);
  append_u64(key, static_cast<uint64_t>(storage_offset));
}

void append_head(std::string& key, bool grad_mode, const std::string& key_extra, size_t n) {
  key.reserve(24 + key_extra.size() + n * 64);
  key += grad_mode ? 'G' : 'N';
  append_u64(key, key_extra.size());
  key += key_extra;
  append_u64(key, n);
}

}  // namespace

bool is_leaf_requiring_grad(const Tensor& t) {
  if (!t.requires_grad()) return false;
  // A tensor that is no view and requires grad has its own autograd metadata, and no _base whose
  // history it could adopt: its grad_fn is all is_leaf() would read (this runs on every call).
  if (!t.is_view()) return !t.impl()->autograd->grad_fn;
  return t.is_leaf();
}

CallerView caller_view_of(const Tensor& t) {
  if (!t.is_view()) return CallerView::none;
  const AutogradMeta* m = t.impl()->autograd.get();
  switch (m ? m->view_creation : ViewCreation::normal) {
    case ViewCreation::no_grad_mode:
      return t._base().requires_grad() ? CallerView::no_grad_mode
                                       : CallerView::no_grad_mode_base_no_grad;
    case ViewCreation::multi_output:
      return autograd::history_reaches_base(t) ? CallerView::multi_output
                                               : CallerView::multi_output_cut_off;
    case ViewCreation::normal:
      break;
  }
  return CallerView::normal;
}

std::string guard_key(const std::vector<Tensor>& inputs, const InputPlan& plan, bool grad_mode,
                      const std::string& key_extra, bool with_offsets) {
  std::string key;
  append_head(key, grad_mode, key_extra, inputs.size());
  for (const Tensor& t : inputs)
    append_tensor(key, t.dtype(), t.requires_grad(), is_leaf_requiring_grad(t), caller_view_of(t),
                  t.sizes(), t.strides(), with_offsets ? t.storage_offset() : kAnyStorageOffset);
  append_plan(key, plan);
  return key;
}

std::string guard_key(const std::vector<InputGuard>& inputs, const InputPlan& plan, bool grad_mode,
                      const std::string& key_extra) {
  std::string key;
  append_head(key, grad_mode, key_extra, inputs.size());
  for (const InputGuard& g : inputs)
    append_tensor(key, g.dtype, g.requires_grad, g.leaf, g.view, g.sizes, g.strides,
                  g.storage_offset);
  append_plan(key, plan);
  return key;
}

std::vector<InputGuard> input_guards(const std::vector<Tensor>& inputs) {
  std::vector<InputGuard> g;
  g.reserve(inputs.size());
  for (const Tensor& t : inputs)
    g.push_back({t.dtype(), t.sizes(), t.strides(), t.storage_offset(), t.requires_grad(),
                 is_leaf_requiring_grad(t), caller_view_of(t)});
  return g;
}

bool guards_offsets(const std::vector<InputGuard>& inputs) {
  for (const InputGuard& g : inputs)
    if (g.storage_offset != kAnyStorageOffset) return true;
  return false;
}

std::string describe(const InputGuard& g) {
  return std::string(dtype_name(g.dtype)) + shape_to_string(g.sizes) + " strides " +
         shape_to_string(g.strides) +
         (g.storage_offset == kAnyStorageOffset ? std::string(" any offset")
                                                : " offset " + std::to_string(g.storage_offset)) +
         (g.requires_grad ? g.leaf ? " requires_grad (a leaf)" : " requires_grad" : "") +
         describe(g.view);
}

std::string describe(CallerView v) {
  switch (v) {
    case CallerView::none:
      return "";
    case CallerView::normal:
      return " a view";
    case CallerView::no_grad_mode:
      return " a view made under no_grad";
    case CallerView::multi_output:
      return " a piece of a multi-output view";
    case CallerView::multi_output_cut_off:
      return " a piece of a multi-output view of a view made under no_grad";
    case CallerView::no_grad_mode_base_no_grad:
      return " a view made under no_grad of a tensor that does not require grad";
  }
  return "";
}

// Walks the records aot.h documents above flatten_arg. The key may come from a caller of the
// public CompiledFunction::call, so every read is bounds-checked.
std::string describe_input(const std::string& key_extra, size_t index) {
  const std::string& k = key_extra;
  size_t pos = 0, tensor = 0, arg = 0;
  auto u64 = [&](uint64_t& v) {
    if (pos + sizeof v > k.size()) return false;
    std::memcpy(&v, k.data() + pos, sizeof v);
    pos += sizeof v;
    return true;
  };
  auto skip_counted = [&] {  // a length byte, then that many bytes
    if (pos >= k.size()) return false;
    pos += 1 + static_cast<unsigned char>(k[pos]);
    return pos <= k.size();
  };
  while (pos < k.size()) {
    char kind = k[pos++];
    uint64_t n = 0, params = 0, buffers = 0, flags = 0;
    if (kind == 'T') {
      if (index == tensor) return "argument " + std::to_string(arg);
      ++tensor;
    } else if (kind == 'L') {
      if (!u64(n)) break;
      if (index - tensor < n)
        return "argument " + std::to_string(arg) + " (element " + std::to_string(index - tensor) +
               " of the list)";
      tensor += n;
    } else if (kind == 'S') {
      if (!skip_counted() || !skip_counted()) break;
    } else if (kind == 'M') {
      if (!u64(params) || !u64(buffers) || !u64(flags)) break;
      if (index - tensor < params) return "parameter " + std::to_string(index - tensor);
      if (index - tensor < params + buffers)
        return "buffer " + std::to_string(index - tensor - params);
      tensor += params + buffers;
      pos += flags;
      continue;  // not an argument
    } else {
      break;
    }
    ++arg;
  }
  return "tensor input " + std::to_string(index);
}

}  // namespace aotgrad::aot
