// Reading guide: index values are checked first (check_indices), then one of three loop shapes
// runs:
//   - pure data movement (index_select, gather) copies element bits through an unsigned type of
//     the element's width, so one instantiation serves every dtype of that width;
//   - accumulating scatters (scatter_add) walk "lines": all positions that share every coordinate
//     except `dim`. Two positions can only write the same output element when they lie on one
//     line, so lines run in parallel without atomics;
//   - row scatters (index_add, embedding_dense_backward) add whole contiguous rows; they run in
//     parallel over (outer index, column chunk) pairs, which again never write the same element.
#include "kernels/indexing.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/arith.h"
#include "kernels/copy.h"
#include "kernels/data.h"
#include "kernels/elementwise.h"
#include "kernels/parallel.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kGrain = 32768;

// A 0-dim tensor read as a 1-element 1-D tensor (ATen's convention for these ops).
Tensor as_1d(const Tensor& t) {
  return t.dim() > 0 ? t : make_view(t, {1}, {1}, t.storage_offset());
}

// The type arithmetic on stored type T runs in (16-bit floats widen to float).
template <typename T>
using compute_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

// d += scale * s, in T's compute type (bool: logical or).
template <typename T, typename C>
inline void accumulate(T& d, C scale, T s) {
  if constexpr (std::is_same_v<T, bool>)
    d = d || (scale && s);
  else
    d = convert<T>(convert<C>(d) + scale * convert<C>(s));
}

// [lo, hi) of the elements thread `tid` of `nt` handles.
inline std::pair<int64_t, int64_t> thread_range(int64_t n) {
  const int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
  return {part_begin(n, tid, nt), part_begin(n, tid + 1, nt)};
}

// ---- index checks ----

[[noreturn]] void bad_index(std::string_view op, int64_t value, int64_t dim, int64_t size,
                            std::string_view of) {
  std::string valid = size == 0 ? "that dimension is empty, so no index is valid"
                                : "valid indices are 0 to " + std::to_string(size - 1) +
                                      " (negative indices are not supported)";
  throw std::invalid_argument(std::string(op) + ": index " + std::to_string(value) +
                              " is out of range for dimension " + std::to_string(dim) + " of " +
                              std::string(of) + ", which has size " + std::to_string(size) + "; " +
                              valid);
}

// Throws naming the first index of `index` (any strides) outside [0, size).
void check_indices(std::string_view op, const Tensor& index, int64_t size, int64_t dim,
                   std::string_view of) {
  const int64_t n = index.numel();
  if (n == 0) return;
  if (index.dtype() != DType::i64)  // i32 indices (index_select, index_add, embedding)
    return check_indices(op, contiguous_copy(index, DType::i64), size, dim, of);
  const int64_t* p = data_of<int64_t>(index);
  if (index.is_contiguous()) {
    int64_t lo = p[0], hi = p[0];
#pragma omp parallel for reduction(min : lo) reduction(max : hi) if (n > kGrain)
    for (int64_t k = 0; k < n; ++k) {
      lo = std::min(lo, p[k]);
      hi = std::max(hi, p[k]);
    }
    if (lo >= 0 && hi < size) return;
    for (int64_t k = 0; k < n; ++k)
      if (p[k] < 0 || p[k] >= size) bad_index(op, p[k], dim, size, of);
    return;
  }
  NdCounter<1> it(index.sizes(), {&index.strides()}, {0});
  for (int64_t k = 0; k < n; ++k, it.next())
    if (p[it[0]] < 0 || p[it[0]] >= size) bad_index(op, p[it[0]], dim, size, of);
}

// The index values as one contiguous i64 array (copied only when the index is strided or i32).
struct FlatIndex {
  Tensor holder;
  const int64_t* data = nullptr;
  int64_t n = 0;
};
FlatIndex flat_index(const Tensor& index) {
  FlatIndex f;
  f.holder = index.is_contiguous() && index.dtype() == DType::i64
                 ? index
                 : contiguous_copy(index, DType::i64);
  f.n = f.holder.numel();
  if (f.n > 0) f.data = data_of<int64_t>(f.holder);
  return f;
}

int64_t prod(const IntList& sizes, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t d = begin; d < end; ++d) p *= sizes[d];
  return p;
}

IntList without(const IntList& v, int64_t dim) {
  IntList r = v;
  r.erase(r.begin() + dim);
  return r;
}

// ---- row scatters ----

// A contiguous tensor seen as [outer, size, inner] around the indexed dim.
struct Rows {
  int64_t outer, size, inner;
};

// dst[o, idx[j], :] += alpha * factor[j] * src[o, j, :] for j < n (dst rows `to`, src rows
// [outer, n, inner]); factor null means 1, and a zero factor skips the row.
template <typename T, typename C>
void add_rows(T* dst, const T* src, Rows to, const int64_t* idx, int64_t n, C alpha,
              const std::vector<C>* factor) {
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (to.inner + kChunk - 1) / kChunk, tasks = to.outer * chunks;
#pragma omp parallel for if (tasks > 1 && to.outer * n * to.inner > kGrain)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / chunks, k0 = (t % chunks) * kChunk;
    const int64_t k1 = std::min(to.inner, k0 + kChunk);
    for (int64_t j = 0; j < n; ++j) {
      C scale = alpha;
      if constexpr (!std::is_same_v<C, bool>) {
        if (factor) {
          if ((*factor)[j] == C(0)) continue;
          scale = alpha * (*factor)[j];
        }
      }
      T* d = dst + (o * to.size + idx[j]) * to.inner;
      const T* s = src + (o * n + j) * to.inner;
      for (int64_t k = k0; k < k1; ++k) accumulate(d[k], scale, s[k]);
    }
  }
}

Tensor masked_fill_impl(const Tensor& self, const Tensor& mask, const elementwise::Input& value) {
  Tensor out = make_tensor(broadcast_shapes(self.sizes(), mask.sizes()), self.dtype());
  visit_compute(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run<T, bool, T, T>(out, {mask, self, value},
                                    [](bool m, T x, T v) -> T { return m ? v : x; });
  });
  return out;
}

}  // namespace

Tensor index_select(std::string_view op, const Tensor& self_in, int64_t dim, const Tensor& index) {
  const Tensor self = as_1d(self_in);
  const int64_t size = self.sizes()[dim];
  check_indices(op, index, size, dim, "self");
  const FlatIndex idx = flat_index(index);
  IntList sizes = self.sizes();
  sizes[dim] = idx.n;
  Tensor out = make_tensor(self_in.dim() == 0 ? IntList{} : sizes, self.dtype());
  const int64_t numel = out.numel();
  if (numel == 0) return out;
  visit_bits(self.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = data_of<U>(self);
    U* dst = data_of<U>(out);
    if (self.is_contiguous()) {
      // out is [outer, n, inner]; each (outer, j) row copies one row of self.
      const int64_t inner = prod(sizes, dim + 1, sizes.size()), n = idx.n;
      const int64_t rows = numel / inner;
      const int64_t* ip = idx.data;
#pragma omp parallel for if (numel > kGrain)
      for (int64_t r = 0; r < rows; ++r) {
        const U* s = src + ((r / n) * size + ip[r % n]) * inner;
        U* d = dst + r * inner;
        for (int64_t k = 0; k < inner; ++k) d[k] = s[k];
      }
      return;
    }
    // Strided self: walk out's rows (every dim but the last) with self's strides (0 on dim)
    // and the position in the index (1 on dim); the index value supplies the dim offset.
    const size_t last = sizes.size() - 1;
    const IntList row_sizes(sizes.begin(), sizes.end() - 1);
    IntList self_strides(self.strides().begin(), self.strides().end() - 1);
    IntList pos_strides(last, 0);
    if (static_cast<size_t>(dim) < last) {
      self_strides[dim] = 0;
      pos_strides[dim] = 1;
    }
    const int64_t sd = self.strides()[dim], s_last = self.strides()[last];
    const int64_t inner = sizes[last], rows = numel / inner;
    const int64_t* ip = idx.data;
    const bool along_last = static_cast<size_t>(dim) == last;
#pragma omp parallel if (numel > kGrain)
    {
      auto [begin, end] = thread_range(rows);
      if (begin < end) {
        NdCounter<2> it(row_sizes, {&self_strides, &pos_strides}, {0, 0});
        it.seek(begin);
        for (int64_t r = begin; r < end; ++r, it.next()) {
          U* d = dst + r * inner;
          if (along_last) {
            const U* s = src + it[0];
            for (int64_t k = 0; k < inner; ++k) d[k] = s[ip[k] * sd];
          } else {
            const U* s = src + it[0] + ip[it[1]] * sd;
            for (int64_t k = 0; k < inner; ++k) d[k] = s[k * s_last];
          }
        }
      }
    }
  });
  return out;
}

Tensor gather(std::string_view op, const Tensor& self_in, int64_t dim, const Tensor& index_in) {
  const Tensor self = as_1d(self_in), index = as_1d(index_in);
  check_indices(op, index, self.sizes()[dim], dim, "self");
  Tensor out = make_tensor(index_in.sizes(), self.dtype());
  const int64_t numel = out.numel();
  if (numel == 0) return out;
  IntList self_strides = self.strides();
  const int64_t sd = self_strides[dim];
  self_strides[dim] = 0;
  const int64_t* ip = data_of<int64_t>(index);
  visit_bits(self.dtype(), [&](auto tag) {
    using U = typename decltype(tag)::type;
    const U* src = data_of<U>(self);
    U* dst = data_of<U>(out);
#pragma omp parallel if (numel > kGrain)
    {
      auto [begin, end] = thread_range(numel);
      if (begin < end) {
        NdCounter<2> it(index.sizes(), {&index.strides(), &self_strides}, {0, 0});
        it.seek(begin);
        for (int64_t k = begin; k < end; ++k, it.next()) dst[k] = src[it[1] + ip[it[0]] * sd];
      }
    }
  });
  return out;
}

Tensor scatter_add(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index_in,
                   const Tensor& src_in) {
  Tensor out = contiguous_copy(self, self.dtype());
  const Tensor out1 = as_1d(out), index = as_1d(index_in), src = as_1d(src_in);
  check_indices(op, index, out1.sizes()[dim], dim, "self");
  if (index.numel() == 0) return out;
  const IntList line_sizes = without(index.sizes(), dim);
  const IntList index_strides = without(index.strides(), dim);
  const IntList src_strides = without(src.strides(), dim);
  const IntList out_strides = without(out1.strides(), dim);
  const int64_t lines = numel_of(line_sizes), len = index.sizes()[dim];
  const int64_t is = index.strides()[dim], ss = src.strides()[dim], os = out1.strides()[dim];
  const int64_t* ip = data_of<int64_t>(index);
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* sp = data_of<T>(src);
    T* dp = data_of<T>(out1);
#pragma omp parallel if (lines > 1 && index.numel() > kGrain)
    {
      auto [begin, end] = thread_range(lines);
      if (begin < end) {
        NdCounter<3> it(line_sizes, {&index_strides, &src_strides, &out_strides}, {0, 0, 0});
        it.seek(begin);
        for (int64_t l = begin; l < end; ++l, it.next())
          for (int64_t j = 0; j < len; ++j)
            accumulate(dp[it[2] + ip[it[0] + j * is] * os], C(1), sp[it[1] + j * ss]);
      }
    }
  });
  return out;
}

Tensor index_add(std::string_view op, const Tensor& self, int64_t dim, const Tensor& index,
                 const Tensor& source_in, const Scalar& alpha) {
  Tensor out = contiguous_copy(self, self.dtype());
  const Tensor out1 = as_1d(out);
  check_indices(op, index, out1.sizes()[dim], dim, "self");
  const FlatIndex idx = flat_index(index);
  if (idx.n == 0 || out.numel() == 0) return out;
  const Tensor source =
      source_in.is_contiguous() ? source_in : contiguous_copy(source_in, source_in.dtype());
  const IntList& sizes = out1.sizes();
  Rows rows{prod(sizes, 0, dim), sizes[dim], prod(sizes, dim + 1, sizes.size())};
  visit_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    add_rows<T, C>(data_of<T>(out), data_of<T>(source), rows, idx.data, idx.n,
                   elementwise::scalar_as<C>(alpha), nullptr);
  });
  return out;
}

Tensor embedding(std::string_view op, const Tensor& weight, const Tensor& indices) {
  check_indices(op, indices, weight.sizes()[0], 0, "weight");
  const FlatIndex idx = flat_index(indices);
  Tensor rows =
      index_select(op, weight, 0, make_view(idx.holder, {idx.n}, {1}, idx.holder.storage_offset()));
  // The fresh result, re-shaped in place: it shares no storage with anyone, so it is no view.
  IntList sizes = indices.sizes();
  sizes.push_back(weight.sizes()[1]);
  rows.impl()->strides = contiguous_strides(sizes);
  rows.impl()->sizes = std::move(sizes);
  return rows;
}

Tensor embedding_dense_backward(std::string_view op, const Tensor& grad, const Tensor& indices,
                                int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  check_indices(op, indices, num_weights, 0, "weight");
  const FlatIndex idx = flat_index(indices);
  const int64_t width = grad.dim() > 0 ? grad.sizes().back() : 1;
  Tensor out = make_tensor({num_weights, width}, grad.dtype());
  std::memset(out.impl()->data_bytes(), 0,
              static_cast<size_t>(out.numel()) * itemsize(out.dtype()));
  if (idx.n == 0 || width == 0) return out;
  const Tensor g = grad.is_contiguous() ? grad : contiguous_copy(grad, grad.dtype());
  visit_float(grad.dtype(), [&](auto ctag) {
    using C = typename decltype(ctag)::type;
    // One factor per position: 0 for padding, 1/count with scale_grad_by_freq.
    std::vector<C> factor;
    if (padding_idx >= 0 || scale_grad_by_freq) {
      std::vector<int64_t> count(scale_grad_by_freq ? num_weights : 0, 0);
      for (int64_t j = 0; j < idx.n && scale_grad_by_freq; ++j) ++count[idx.data[j]];
      factor.resize(idx.n);
      for (int64_t j = 0; j < idx.n; ++j) {
        const int64_t w = idx.data[j];
        factor[j] = w == padding_idx     ? C(0)
                    : scale_grad_by_freq ? C(1) / static_cast<C>(count[w])
                                         : C(1);
      }
    }
    visit_dtype(grad.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_same_v<compute_t<T>, C>)
        add_rows<T, C>(data_of<T>(out), data_of<T>(g), Rows{1, num_weights, width}, idx.data, idx.n,
                       C(1), factor.empty() ? nullptr : &factor);
    });
  });
  return out;
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  return masked_fill_impl(self, mask, value);
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Tensor& value) {
  return masked_fill_impl(self, mask, value);
}

Tensor tril_triu(const Tensor& self, int64_t diagonal, bool lower) {
  Tensor out = contiguous_copy(self, self.dtype());
  const IntList& sizes = out.sizes();
  const int64_t rows_per_matrix = sizes[sizes.size() - 2], cols = sizes.back();
  if (out.numel() == 0) return out;
  const int64_t rows = out.numel() / cols;
  // Clamped so that i + k cannot overflow; outside this range the answer no longer changes.
  const int64_t k = std::clamp<int64_t>(diagonal, -rows_per_matrix - 1, cols + 1);
  const int64_t item = static_cast<int64_t>(itemsize(out.dtype()));
  char* base = out.impl()->data_bytes();
  // Every dtype's zero is all-zero bits, so clearing is a memset of each row's dropped range.
#pragma omp parallel for if (out.numel() > kGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r % rows_per_matrix;
    const int64_t lo = lower ? std::clamp<int64_t>(i + k + 1, 0, cols) : 0;
    const int64_t hi = lower ? cols : std::clamp<int64_t>(i + k, 0, cols);
    if (lo < hi)
      std::memset(base + (r * cols + lo) * item, 0, static_cast<size_t>((hi - lo) * item));
  }
  return out;
}

}  // namespace aotgrad::kernels
