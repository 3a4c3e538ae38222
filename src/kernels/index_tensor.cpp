// Reading guide: a Plan turns the indices into one contiguous i64 tensor of the broadcast shape B
// per indexed dim (masks expanded to the coordinates of their true elements, negative values
// wrapped, every value range-checked), plus where B and the remaining dims of self sit in the
// result. `walk` then visits every result element as (offset in self, offset in the result
// layout); index copies self -> result, index_put copies or adds values -> its copy of self.
// index runs in parallel over B; index_put runs serially, so that duplicate indices give the same
// answer on every run (last write wins, or the sum in one fixed order).
#include "kernels/index_tensor.h"

#include <stdexcept>
#include <string>

#include "kernels/arith.h"
#include "kernels/copy.h"
#include "kernels/data.h"
#include "kernels/indexing.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kGrain = 32768;

[[noreturn]] void fail(std::string_view op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

int64_t numel_of(const IntList& sizes) {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

// Where the broadcast index shape B and the dims of self that are not indexed sit in the result.
struct Layout {
  IntList b_sizes;
  IntList index_dims;  // dims of self that are indexed, ascending
  IntList rest_dims;   // the other dims of self, ascending
  size_t b_pos = 0;    // first result dim of B
  IntList out_sizes;
};

Layout layout(std::string_view op, const IntList& self_sizes,
              const std::vector<const IntList*>& index_sizes) {
  if (index_sizes.size() > self_sizes.size())
    fail(op, "too many indices for a tensor of dimension " + std::to_string(self_sizes.size()) +
                 " (got " + std::to_string(index_sizes.size()) + ")");
  Layout l;
  bool first = true;
  for (size_t d = 0; d < self_sizes.size(); ++d) {
    const IntList* s = d < index_sizes.size() ? index_sizes[d] : nullptr;
    if (!s) {
      l.rest_dims.push_back(static_cast<int64_t>(d));
      continue;
    }
    l.index_dims.push_back(static_cast<int64_t>(d));
    try {
      l.b_sizes = first ? *s : broadcast_shapes(l.b_sizes, *s);
    } catch (const std::invalid_argument&) {
      fail(op, "shape mismatch: the index tensors do not broadcast together (" +
                   shape_to_string(l.b_sizes) + " and " + shape_to_string(*s) + " at dim " +
                   std::to_string(d) + ")");
    }
    first = false;
  }
  if (l.index_dims.empty()) {  // only None: the whole of self
    l.out_sizes = self_sizes;
    l.rest_dims.clear();
    for (size_t d = 0; d < self_sizes.size(); ++d) l.rest_dims.push_back(static_cast<int64_t>(d));
    return l;
  }
  const int64_t lo = l.index_dims.front(), hi = l.index_dims.back();
  const bool adjacent = hi - lo + 1 == static_cast<int64_t>(l.index_dims.size());
  l.b_pos = adjacent ? static_cast<size_t>(lo) : 0;
  // The rest dims keep their order; when B stays in place, those before it come first.
  for (int64_t d : l.rest_dims)
    if (adjacent && d < lo) l.out_sizes.push_back(self_sizes[d]);
  l.out_sizes.insert(l.out_sizes.end(), l.b_sizes.begin(), l.b_sizes.end());
  for (int64_t d : l.rest_dims)
    if (!adjacent || d > hi) l.out_sizes.push_back(self_sizes[d]);
  return l;
}

// Per dim of self: an undefined tensor (not indexed) or i64 indices (i32 ones widened); masks
// become coordinates.
std::vector<Tensor> expand_masks(std::string_view op, const Tensor& self,
                                 const std::vector<Tensor>& indices) {
  std::vector<Tensor> out;
  for (const Tensor& e : indices) {
    if (!e.defined()) {
      out.push_back(Tensor());
      continue;
    }
    if (e.dtype() == DType::i64 || e.dtype() == DType::i32) {
      out.push_back(e.dtype() == DType::i64 ? e : contiguous_copy(e, DType::i64));
      continue;
    }
    if (e.dtype() != DType::b8 && e.dtype() != DType::u8)  // u8: PyTorch's byte mask
      fail(op, "tensors used as indices must be i64 or b8 (bool) tensors (or i32, u8), got " +
                   std::string(dtype_name(e.dtype())));
    const size_t at = out.size(), m = static_cast<size_t>(e.dim());
    if (m == 0) fail(op, "a 0-dim bool index is not supported; index with a 1-element mask");
    for (size_t k = 0; k < m; ++k)
      if (at + k >= static_cast<size_t>(self.dim()) || e.sizes()[k] != self.sizes()[at + k])
        fail(op, "the shape of the mask " + shape_to_string(e.sizes()) + " at index " +
                     std::to_string(at) + " does not match the shape of the indexed tensor " +
                     shape_to_string(self.sizes()));
    const Tensor mask = contiguous_copy(e, DType::b8);
    const bool* p = data_of<bool>(mask);
    int64_t count = 0;
    for (int64_t i = 0; i < mask.numel(); ++i) count += p[i] ? 1 : 0;
    std::vector<Tensor> coords;
    for (size_t k = 0; k < m; ++k) coords.push_back(make_tensor({count}, DType::i64));
    int64_t j = 0;
    for (int64_t i = 0; i < mask.numel(); ++i) {
      if (!p[i]) continue;
      int64_t rest = i;
      for (size_t k = m; k-- > 0;) {
        data_of<int64_t>(coords[k])[j] = rest % e.sizes()[k];
        rest /= e.sizes()[k];
      }
      ++j;
    }
    out.insert(out.end(), coords.begin(), coords.end());
  }
  if (out.size() > static_cast<size_t>(self.dim()))
    fail(op, "too many indices for a tensor of dimension " + std::to_string(self.dim()) + " (got " +
                 std::to_string(out.size()) + ")");
  return out;
}

struct Plan {
  Layout l;
  std::vector<Tensor> index;  // contiguous, B-shaped, wrapped and checked; one per index dim
};

Plan make_plan(std::string_view op, const Tensor& self, const std::vector<Tensor>& indices) {
  const std::vector<Tensor> per_dim = expand_masks(op, self, indices);
  std::vector<const IntList*> sizes;
  for (const Tensor& t : per_dim) sizes.push_back(t.defined() ? &t.sizes() : nullptr);
  Plan p{layout(op, self.sizes(), sizes), {}};
  for (int64_t d : p.l.index_dims) {
    const Tensor& t = per_dim[d];
    Tensor b = contiguous_copy(
        make_view(t, p.l.b_sizes, broadcast_strides(t, p.l.b_sizes), t.storage_offset()),
        DType::i64);
    int64_t* v = data_of<int64_t>(b);
    const int64_t size = self.sizes()[d];
    for (int64_t i = 0; i < b.numel(); ++i) {
      if (v[i] < -size || v[i] >= size)
        fail(op, "index " + std::to_string(v[i]) + " is out of bounds for dimension " +
                     std::to_string(d) + " with size " + std::to_string(size) +
                     (size == 0 ? ""
                                : "; valid indices are " + std::to_string(-size) + " to " +
                                      std::to_string(size - 1)));
      if (v[i] < 0) v[i] += size;
    }
    p.index.push_back(std::move(b));
  }
  return p;
}

// Calls f(self_offset, result_offset) for every result element; `self_strides` address self's
// dims, `res_strides` the result's dims (B at b_pos, the rest dims around it).
template <typename F>
void walk(const Plan& p, const IntList& self_strides, const IntList& res_strides, bool parallel,
          F f) {
  const Layout& l = p.l;
  const size_t nb_dims = l.b_sizes.size();
  const IntList b_strides(res_strides.begin() + l.b_pos, res_strides.begin() + l.b_pos + nb_dims);
  IntList rest_sizes, rest_self, rest_res;  // the rest dims, in result order
  for (size_t k = 0, r = 0; r < res_strides.size(); ++r) {
    if (r >= l.b_pos && r < l.b_pos + nb_dims) continue;
    rest_sizes.push_back(l.out_sizes[r]);
    rest_res.push_back(res_strides[r]);
    rest_self.push_back(self_strides[l.rest_dims[k++]]);
  }
  const int64_t nb = numel_of(l.b_sizes), nr = numel_of(rest_sizes);
  if (nb == 0 || nr == 0) return;
  std::vector<const int64_t*> idx;
  for (const Tensor& t : p.index) idx.push_back(data_of<int64_t>(t));
#pragma omp parallel for if (parallel && nb * nr > kGrain)
  for (int64_t b = 0; b < nb; ++b) {
    int64_t so = 0, ro = 0;
    for (size_t k = 0; k < idx.size(); ++k) so += idx[k][b] * self_strides[l.index_dims[k]];
    for (int64_t d = static_cast<int64_t>(nb_dims) - 1, rest = b; d >= 0; --d) {
      ro += (rest % l.b_sizes[d]) * b_strides[d];
      rest /= l.b_sizes[d];
    }
    NdCounter<2> it(rest_sizes, {&rest_self, &rest_res}, {so, ro});
    for (int64_t r = 0; r < nr; ++r, it.next()) f(it[0], it[1]);
  }
}

}  // namespace

IntList index_result_sizes(std::string_view op, const IntList& self_sizes,
                           const std::vector<const IntList*>& index_sizes) {
  return layout(op, self_sizes, index_sizes).out_sizes;
}

Tensor index(std::string_view op, const Tensor& self, const std::vector<Tensor>& indices) {
  const Plan p = make_plan(op, self, indices);
  Tensor out = make_tensor(p.l.out_sizes, self.dtype());
  visit_bits(self.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = data_of<U>(self);
    U* dst = data_of<U>(out);
    walk(p, self.strides(), out.strides(), /*parallel=*/true,
         [&](int64_t s, int64_t r) { dst[r] = src[s]; });
  });
  return out;
}

Tensor index_put(std::string_view op, const Tensor& self, const std::vector<Tensor>& indices,
                 const Tensor& values, bool accumulate) {
  const Plan p = make_plan(op, self, indices);
  const IntList& shape = p.l.out_sizes;
  bool fits = values.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t d = 0; fits && d < values.dim(); ++d) {
    const int64_t s = values.sizes()[values.dim() - 1 - d];
    fits = s == 1 || s == shape[shape.size() - 1 - d];
  }
  if (!fits)
    fail(op, "shape mismatch: value tensor of shape " + shape_to_string(values.sizes()) +
                 " cannot be broadcast to indexing result of shape " + shape_to_string(shape));
  Tensor out = contiguous_copy(self, self.dtype());
  const IntList vstrides = broadcast_strides(values, shape);
  if (accumulate) {
    visit_dtype(self.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = data_of<T>(values);
      T* dst = data_of<T>(out);
      visit_compute(self.dtype(), [&](auto ctag) {
        using C = typename decltype(ctag)::type;
        walk(p, out.strides(), vstrides, /*parallel=*/false, [&](int64_t s, int64_t r) {
          if constexpr (std::is_same_v<C, bool>)
            dst[s] = convert<T>(convert<bool>(dst[s]) || convert<bool>(src[r]));
          else
            dst[s] = convert<T>(convert<C>(dst[s]) + convert<C>(src[r]));
        });
      });
    });
    return out;
  }
  visit_bits(self.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = data_of<U>(values);
    U* dst = data_of<U>(out);
    walk(p, out.strides(), vstrides, /*parallel=*/false,
         [&](int64_t s, int64_t r) { dst[s] = src[r]; });
  });
  return out;
}

}  // namespace aotgrad::kernels
