#include "aot/input_plan.h"

#include <algorithm>
#include <set>
#include <stdexcept>

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
bool overlap(const Tensor& a, const Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  Footprint fa = footprint(a), fb = footprint(b);
  int64_t ia = fa.lo * static_cast<int64_t>(itemsize(a.dtype()));
  int64_t ja = (fa.hi + 1) * static_cast<int64_t>(itemsize(a.dtype()));
  int64_t ib = fb.lo * static_cast<int64_t>(itemsize(b.dtype()));
  int64_t jb = (fb.hi + 1) * static_cast<int64_t>(itemsize(b.dtype()));
  if (ja <= ib || jb <= ia) return false;
  if (fa.offsets.empty() || fb.offsets.empty() || a.dtype() != b.dtype()) return true;
  std::vector<int64_t> common;
  std::set_intersection(fa.offsets.begin(), fa.offsets.end(), fb.offsets.begin(), fb.offsets.end(),
                        std::back_inserter(common));
  return !common.empty();
}

// The tensor all members view, when there is one: a shared _base, or a member the others view.
Tensor common_base(const std::vector<Tensor>& members) {
  Tensor base;
  for (const Tensor& m : members) {
    Tensor b = m.is_view() ? m._base() : m;
    if (!base.defined()) base = b;
    else if (!base.is_same(b)) return Tensor();
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
  return s;
}

InputPlan plan_inputs(const std::vector<Tensor>& inputs, const std::string& fn_name) {
  InputPlan plan;
  size_t n = inputs.size();
  plan.inputs.resize(n);
  // Union-find over inputs that overlap in memory (distinct tensors only).
  std::vector<size_t> group(n);
  for (size_t i = 0; i < n; ++i) group[i] = i;
  auto find = [&](size_t i) {
    while (group[i] != i) i = group[i] = group[group[i]];
    return i;
  };
  std::vector<bool> is_dup(n, false);
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < j; ++i) {
      if (is_dup[i]) continue;
      if (inputs[i].is_same(inputs[j])) {
        plan.inputs[j] = {InputPlan::Kind::duplicate, i};
        is_dup[j] = true;
        break;
      }
      if (inputs[i].storage() == inputs[j].storage() && overlap(inputs[i], inputs[j]))
        group[find(j)] = find(i);
    }
  std::vector<int> base_of_group(n, -1);
  for (size_t i = 0; i < n; ++i) {
    if (is_dup[i]) continue;
    size_t root = find(i);
    bool grouped = false;
    for (size_t k = 0; k < n; ++k)
      if (k != i && !is_dup[k] && find(k) == root) grouped = true;
    if (!grouped) {
      plan.inputs[i] = {InputPlan::Kind::plain, plan.graph_inputs.size()};
      plan.graph_inputs.push_back({false, i});
      continue;
    }
    if (base_of_group[root] < 0) {
      base_of_group[root] = static_cast<int>(plan.bases.size());
      plan.bases.push_back({});
      plan.graph_inputs.push_back({true, plan.bases.size() - 1});
    }
    plan.bases[base_of_group[root]].members.push_back(i);
    plan.inputs[i] = {InputPlan::Kind::member, static_cast<size_t>(base_of_group[root])};
  }
  for (SyntheticBase& b : plan.bases) {
    std::vector<Tensor> members;
    bool any_grad = false;
    for (size_t m : b.members) {
      members.push_back(inputs[m]);
      any_grad = any_grad || inputs[m].requires_grad();
      if (inputs[m].dtype() != inputs[b.members[0]].dtype())
        throw trace::UnsupportedError(fn_name + ": inputs " + std::to_string(b.members[0]) + " and " +
                                      std::to_string(m) + " overlap in memory but have different "
                                      "dtypes; pass copies instead.");
    }
    b.common_base = common_base(members).defined();
    if (!b.common_base && any_grad)
      throw trace::UnsupportedError(fn_name + ": inputs " + std::to_string(b.members[0]) + " and " +
                                    std::to_string(b.members[1]) +
                                    " overlap in memory, require grad, and are not views of one "
                                    "common base; pass clones or views of one tensor.");
  }
  return plan;
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
