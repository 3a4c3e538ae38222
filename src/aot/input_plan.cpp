#include "aot/input_plan.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "trace/functionalize.h"

namespace aotgrad::aot {
namespace {

// Element offsets a tensor touches, when few enough to list; otherwise its [lo, hi] extent.
struct Footprint {
  int64_t lo = 0, hi = -1;
  std::vector<int64_t> offsets;  // sorted; empty when only the extent is known
};

Footprint footprint(const Tensor& t) {
  Footprint f;
  if (t.numel() == 0) return f;
  f.lo = f.hi = t.storage_offset();
  for (int64_t d = 0; d < t.dim(); ++d) {
    int64_t span = (t.size(d) - 1) * t.stride(d);
    (span >= 0 ? f.hi : f.lo) += span;
  }
  if (t.numel() <= 1 << 16) {
    std::vector<int64_t> idx(t.dim(), 0);
    for (int64_t n = 0; n < t.numel(); ++n) {
      int64_t off = t.storage_offset();
      for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.stride(d);
      f.offsets.push_back(off);
      for (int64_t d = t.dim() - 1; d >= 0; --d) {
        if (++idx[d] < t.size(d)) break;
        idx[d] = 0;
      }
    }
    std::sort(f.offsets.begin(), f.offsets.end());
  }
  return f;
}

// Whether two views of one storage share an element (exact when both footprints are listed;
// otherwise conservative on the extents).
bool overlap(const Tensor& a, const Footprint& fa, const Tensor& b, const Footprint& fb) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  int64_t ia = fa.lo * static_cast<int64_t>(itemsize(a.dtype()));
  int64_t ja = (fa.hi + 1) * static_cast<int64_t>(itemsize(a.dtype()));
  int64_t ib = fb.lo * static_cast<int64_t>(itemsize(b.dtype()));
  int64_t jb = (fb.hi + 1) * static_cast<int64_t>(itemsize(b.dtype()));
  if (ja <= ib || jb <= ia) return false;
  if (fa.offsets.empty() || fb.offsets.empty() || a.dtype() != b.dtype()) return true;
  for (size_t x = 0, y = 0; x < fa.offsets.size() && y < fb.offsets.size();) {
    if (fa.offsets[x] == fb.offsets[y]) return true;
    if (fa.offsets[x] < fb.offsets[y])
      ++x;
    else
      ++y;
  }
  return false;
}

// The tensor all members view, when there is one: a shared _base, or a member the others view.
Tensor common_base(const std::vector<Tensor>& members) {
  Tensor base;
  for (const Tensor& m : members) {
    Tensor b = m.is_view() ? m._base() : m;
    if (!base.defined())
      base = b;
    else if (!base.is_same(b))
      return Tensor();
  }
  return base;
}

}  // namespace

std::string InputPlan::to_string() const {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Entry& e = inputs[i];
    s += "input " + std::to_string(i) + ": ";
    if (e.kind == Kind::plain) s += "graph input " + std::to_string(e.index);
    if (e.kind == Kind::duplicate) s += "duplicate of input " + std::to_string(e.index);
    if (e.kind == Kind::member) s += "view of synthetic base " + std::to_string(e.index);
    s += "\n";
  }
  for (size_t b = 0; b < bases.size(); ++b)
    s += "synthetic base " + std::to_string(b) + ": " + shape_to_string(bases[b].sizes) +
         " strides " + shape_to_string(bases[b].strides) + " offset " +
         std::to_string(bases[b].storage_offset) + "\n";
  for (size_t i = 0; i < same_base_as.size(); ++i)
    if (same_base_as[i] != i)
      s += "input " + std::to_string(i) + ": a view of input " + std::to_string(same_base_as[i]) +
           "'s _base\n";
  return s;
}

namespace {

// The pairwise search: which inputs repeat an earlier one, and the union-find forest of inputs
// that overlap in memory.
struct AliasSearch {
  InputAliasing a;
  std::vector<std::optional<Footprint>> footprints;  // computed once per input, when first needed

  explicit AliasSearch(size_t n) : footprints(n) {
    a.duplicate_of.assign(n, -1);
    a.group.resize(n);
    for (size_t i = 0; i < n; ++i) a.group[i] = i;
  }
  size_t find(size_t i) {
    while (a.group[i] != i) i = a.group[i] = a.group[a.group[i]];
    return i;
  }
  // Input j against an earlier input i (a duplicate refers to the first earlier non-duplicate that
  // is the same tensor, and stops the scan).
  bool visit(const std::vector<Tensor>& inputs, size_t i, size_t j) {
    if (a.duplicate_of[i] >= 0) return false;
    if (inputs[i].is_same(inputs[j])) {
      a.duplicate_of[j] = static_cast<int64_t>(i);
      return true;
    }
    if (inputs[i].storage() == inputs[j].storage() &&
        overlap(inputs[i], footprint_of(inputs, i), inputs[j], footprint_of(inputs, j)))
      a.group[find(j)] = find(i);
    return false;
  }
  const Footprint& footprint_of(const std::vector<Tensor>& inputs, size_t i) {
    if (!footprints[i]) footprints[i] = footprint(inputs[i]);
    return *footprints[i];
  }
  InputAliasing result() {
    for (size_t i = 0; i < a.group.size(); ++i) a.group[i] = find(i);
    return std::move(a);
  }
};

// Why the overlapping inputs `members` cannot be passed as one synthetic base, or "" when they can.
std::string unmergeable_reason(const std::vector<Tensor>& inputs,
                               const std::vector<size_t>& members, const std::string& fn_name) {
  std::vector<Tensor> tensors;
  bool any_grad = false;
  for (size_t m : members) {
    tensors.push_back(inputs[m]);
    any_grad = any_grad || inputs[m].requires_grad();
    if (inputs[m].dtype() != inputs[members[0]].dtype())
      return fn_name + ": inputs " + std::to_string(members[0]) + " and " + std::to_string(m) +
             " overlap in memory but have different dtypes, and one is mutated; pass copies "
             "instead.";
  }
  const Tensor base = common_base(tensors);
  if (any_grad && !base.defined())
    return fn_name + ": inputs " + std::to_string(members[0]) + " and " +
           std::to_string(members[1]) +
           " overlap in memory, require grad, are not views of one common base, and one is "
           "mutated; pass clones or views of one tensor.";
  // A view that requires grad of a base that does not (requires_grad_() on the view, or a piece
  // of such a view): its gradient goes to its own leaf, which a synthetic base made of the base
  // cannot reach.
  if (any_grad && !base.requires_grad())
    for (size_t m : members)
      if (inputs[m].requires_grad())
        return fn_name + ": input " + std::to_string(m) +
               " requires grad as a leaf of its own (requires_grad_() on a view, or a view of "
               "one), overlaps input " +
               std::to_string(m == members[0] ? members[1] : members[0]) +
               " in memory, and one of them is mutated; the tensor they view does not require "
               "grad. Pass clones, or call requires_grad_() on the tensor they view.";
  return "";
}

}  // namespace

// A synthetic base is passed whole (the members' common _base, or their whole storage), and the
// epilogue writes it back whole: an input outside the group that lies in it would have its own
// write-back overwritten by the base's stale copy of its elements (or overwrite the base's). Such
// an input joins the group, repeatedly, since the group's base may grow with it. Returns the
// groups, as InputAliasing::group.
std::vector<size_t> close_groups_over_bases(const std::vector<Tensor>& inputs,
                                            const InputAliasing& aliasing) {
  size_t n = inputs.size();
  std::vector<size_t> group = aliasing.group;
  bool indices = true;  // every representative an input of its own group (the search's form)
  for (size_t i = 0; i < n && indices; ++i) indices = group[i] < n && group[group[i]] == group[i];
  if (!indices) {
    std::unordered_map<size_t, size_t> label;
    for (size_t i = 0; i < n; ++i) group[i] = label.try_emplace(group[i], i).first->second;
  }
  std::vector<size_t> size(n, 0);
  bool any_base = false;
  for (size_t i = 0; i < n; ++i)
    if (aliasing.duplicate_of[i] < 0) any_base = ++size[group[i]] > 1 || any_base;
  if (!any_base) return group;
  for (bool changed = true; changed;) {
    changed = false;
    std::vector<std::vector<size_t>> members(n);
    for (size_t i = 0; i < n; ++i)
      if (aliasing.duplicate_of[i] < 0) members[group[i]].push_back(i);
    for (size_t g = 0; g < n && !changed; ++g) {
      if (members[g].size() < 2) continue;
      std::vector<Tensor> tensors;
      for (size_t m : members[g]) tensors.push_back(inputs[m]);
      Tensor base = common_base(tensors);
      const Storage* storage = inputs[members[g][0]].storage().get();
      std::optional<Footprint> fb;
      if (base.defined()) fb = footprint(base);
      for (size_t i = 0; i < n && !changed; ++i) {
        if (aliasing.duplicate_of[i] >= 0 || group[i] == g ||
            inputs[i].storage().get() != storage || inputs[i].numel() == 0)
          continue;
        if (base.defined() && !overlap(base, *fb, inputs[i], footprint(inputs[i]))) continue;
        size_t other = group[i];
        for (size_t& k : group)
          if (k == other) k = g;
        changed = true;
      }
    }
  }
  return group;
}

namespace {

// InputPlan::same_base_as for a plan whose entries are set.
std::vector<size_t> views_of_one_base(const std::vector<Tensor>& inputs, const InputPlan& plan) {
  const size_t n = inputs.size();
  auto graph_input = [&](size_t i) {  // plain inputs and bases numbered apart
    const InputPlan::Entry& e = plan.inputs[i];
    return e.kind == InputPlan::Kind::member ? 2 * e.index + 1 : 2 * e.index;
  };
  std::vector<size_t> first(n);
  bool any = false;
  for (size_t i = 0; i < n; ++i) {
    first[i] = i;
    if (plan.inputs[i].kind == InputPlan::Kind::duplicate || !inputs[i].is_view()) continue;
    const TensorImpl* base = inputs[i]._base().impl();
    for (size_t j = 0; j < i; ++j)
      if (first[j] == j && plan.inputs[j].kind != InputPlan::Kind::duplicate &&
          inputs[j].is_view() && inputs[j]._base().impl() == base) {
        first[i] = j;
        any = any || graph_input(i) != graph_input(j);
        break;
      }
  }
  return any ? first : std::vector<size_t>{};
}

}  // namespace

// Groups are numbered by their first member, so the plan does not depend on which representative
// the search picked. A group that cannot become a synthetic base is passed as plain inputs and
// remembered: that is exact while none of them is mutated, and capture refuses the call when one
// is (PyTorch, too, builds synthetic bases only for groups with a mutation).
InputPlan plan_from_aliasing(const std::vector<Tensor>& inputs, const InputAliasing& aliasing,
                             const std::string& fn_name) {
  size_t n = inputs.size();
  InputPlan plan;
  plan.inputs.resize(n);
  std::vector<size_t> first_of_group(n, n), root(n, n);
  std::vector<std::vector<size_t>> members_of_root(n);
  const std::vector<size_t> group = close_groups_over_bases(inputs, aliasing);
  for (size_t i = 0; i < n; ++i) {
    if (aliasing.duplicate_of[i] >= 0) {
      plan.inputs[i] = {InputPlan::Kind::duplicate, static_cast<size_t>(aliasing.duplicate_of[i])};
      continue;
    }
    size_t g = group[i];
    if (first_of_group[g] == n) first_of_group[g] = i;
    root[i] = first_of_group[g];
    members_of_root[root[i]].push_back(i);
  }
  std::vector<bool> mergeable(n, false);
  for (size_t r = 0; r < n; ++r) {
    if (members_of_root[r].size() < 2) continue;
    std::string why = unmergeable_reason(inputs, members_of_root[r], fn_name);
    mergeable[r] = why.empty();
    if (!mergeable[r]) plan.unmergeable.push_back({members_of_root[r], why});
  }
  std::vector<int> base_of_group(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (aliasing.duplicate_of[i] >= 0) continue;
    size_t r = root[i];
    if (!mergeable[r]) {
      plan.inputs[i] = {InputPlan::Kind::plain, plan.graph_inputs.size()};
      plan.graph_inputs.push_back({false, i});
      continue;
    }
    if (base_of_group[r] < 0) {
      base_of_group[r] = static_cast<int>(plan.bases.size());
      plan.bases.push_back({});
      plan.graph_inputs.push_back({true, plan.bases.size() - 1});
    }
    plan.bases[base_of_group[r]].members.push_back(i);
    plan.inputs[i] = {InputPlan::Kind::member, static_cast<size_t>(base_of_group[r])};
  }
  plan.same_base_as = views_of_one_base(inputs, plan);
  for (SyntheticBase& b : plan.bases) {
    std::vector<Tensor> members;
    for (size_t m : b.members) members.push_back(inputs[m]);
    Tensor base = common_base(members);
    b.common_base = base.defined();
    if (b.common_base) {
      b.sizes = base.sizes();
      b.strides = base.strides();
      b.storage_offset = base.storage_offset();
    } else {
      const Tensor& first = members[0];
      b.sizes = {static_cast<int64_t>(first.storage()->nbytes() / itemsize(first.dtype()))};
      b.strides = {1};
    }
  }
  return plan;
}

namespace {

// Up to this many inputs, comparing every pair of storage pointers beats sorting them.
constexpr size_t kFewInputs = 16;

// What plan_from_aliasing gives when no two inputs share a storage: input i is graph input i.
InputPlan trivial_plan(size_t n) {
  InputPlan plan;
  plan.inputs.resize(n);
  plan.graph_inputs.resize(n);
  for (size_t i = 0; i < n; ++i) {
    plan.inputs[i] = {InputPlan::Kind::plain, i};
    plan.graph_inputs[i] = {false, i};
  }
  return plan;
}

}  // namespace

bool storages_all_distinct(const std::vector<Tensor>& inputs) {
  if (inputs.size() > kFewInputs) return false;
  for (size_t j = 1; j < inputs.size(); ++j)
    for (size_t i = 0; i < j; ++i)
      if (inputs[i].storage() == inputs[j].storage()) return false;
  return true;
}

bool is_trivial_plan(const InputPlan& plan) {
  if (!plan.bases.empty() || !plan.unmergeable.empty() || !plan.same_base_as.empty() ||
      plan.graph_inputs.size() != plan.inputs.size())
    return false;
  for (size_t i = 0; i < plan.inputs.size(); ++i)
    if (plan.inputs[i] != InputPlan::Entry{InputPlan::Kind::plain, i} ||
        plan.graph_inputs[i] != InputPlan::GraphInput{false, i})
      return false;
  return true;
}

// Only inputs that share a storage can repeat or overlap, so the pairwise search runs within each
// storage's bucket (found by sorting the storage pointers), visiting the pairs in input order; a
// call whose inputs all have storages of their own costs one sort (a few inputs: one pointer
// comparison per pair, and no allocation beyond the plan).
InputPlan plan_inputs(const std::vector<Tensor>& inputs, const std::string& fn_name) {
  size_t n = inputs.size();
  if (storages_all_distinct(inputs)) return trivial_plan(n);
  std::vector<std::pair<const Storage*, size_t>> by_storage(n);
  for (size_t i = 0; i < n; ++i) by_storage[i] = {inputs[i].storage().get(), i};
  std::sort(by_storage.begin(), by_storage.end());
  AliasSearch search(n);
  for (size_t lo = 0, hi = 0; lo < n; lo = hi) {
    while (hi < n && by_storage[hi].first == by_storage[lo].first) ++hi;
    for (size_t jj = lo + 1; jj < hi; ++jj)
      for (size_t ii = lo; ii < jj; ++ii)
        if (search.visit(inputs, by_storage[ii].second, by_storage[jj].second)) break;
  }
  return plan_from_aliasing(inputs, search.result(), fn_name);
}

std::vector<Tensor> graph_inputs_for(const InputPlan& plan, const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  out.reserve(plan.graph_inputs.size());
  for (const InputPlan::GraphInput& g : plan.graph_inputs) {
    if (!g.is_base) {
      out.push_back(inputs[g.index]);
      continue;
    }
    const SyntheticBase& b = plan.bases[g.index];
    const Tensor& first = inputs[b.members[0]];
    if (b.common_base) {
      out.push_back(first.is_view() ? first._base() : first);
    } else {
      NoGradGuard no_grad;
      int64_t numel = static_cast<int64_t>(first.storage()->nbytes() / itemsize(first.dtype()));
      out.push_back(as_strided(first, {numel}, {1}, 0));
    }
  }
  return out;
}

}  // namespace aotgrad::aot
