// Masked attention kernels (kernels/attention.h). Reading guide: Operand finds where each batch
// entry of an operand starts and its row stride (copying only an operand whose rows are not
// unit-stride); attend_forward / attend_backward do one batch entry; the two entry points run
// them over the batch, in parallel when the batch has at least one entry per thread (each call
// to oneDNN's sgemm then runs on its own thread), else one entry at a time with sgemm's own
// threads.
#include "kernels/attention.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/data.h"
#include "kernels/vec/rows.h"

namespace aotgrad::kernels {
namespace {

// An operand [*, rows, cols] seen as `batch` matrices: entry n starts at offset[n] (elements)
// and its rows are `ld` apart, columns unit-stride.
template <typename T>
struct Operand {
  Tensor held;  // the contiguous copy, when the rows were not unit-stride
  const T* data = nullptr;
  std::vector<int64_t> offset;
  int64_t ld = 1;
};

// Offsets of each batch entry of `t` (its leading dims, all but the last two).
std::vector<int64_t> batch_offsets(const Tensor& t) {
  const int64_t dims = t.dim() - 2;
  int64_t batch = 1;
  for (int64_t d = 0; d < dims; ++d) batch *= t.size(d);
  std::vector<int64_t> offsets(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) {
    int64_t rest = n, off = 0;
    for (int64_t d = dims - 1; d >= 0; --d) {
      off += (rest % t.size(d)) * t.stride(d);
      rest /= t.size(d);
    }
    offsets[static_cast<size_t>(n)] = off;
  }
  return offsets;
}

template <typename T>
Operand<T> operand(const Tensor& t) {
  Operand<T> o;
  const int64_t rows = t.size(-2), cols = t.size(-1);
  const bool direct = (cols <= 1 || t.stride(-1) == 1) && (rows <= 1 || t.stride(-2) >= cols);
  o.held = direct ? t : t.contiguous();
  o.data = data_of<const T>(o.held);
  o.offset = batch_offsets(o.held);
  o.ld = std::max<int64_t>({1, cols, rows > 1 ? o.held.stride(-2) : 1});
  return o;
}

// Row-major C[M, N] = op(A) @ op(B), op(X) = X or X^T as `ta` / `tb` say ('N' / 'T').
template <typename T>
void product(char ta, char tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
             int64_t ldb, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc) != dnnl_success)
      throw std::runtime_error("masked_attention: oneDNN sgemm rejected a [" + std::to_string(m) +
                               ", " + std::to_string(k) + "] x [" + std::to_string(k) + ", " +
                               std::to_string(n) + "] product");
  } else {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        T acc = 0;
        for (int64_t p = 0; p < k; ++p)
          acc += (ta == 'N' ? a[i * lda + p] : a[p * lda + i]) *
                 (tb == 'N' ? b[p * ldb + j] : b[j * ldb + p]);
        c[i * ldc + j] = acc;
      }
  }
}

// y = softmax(x) over n >= 1 elements, as kernels::softmax computes it.
template <typename T>
void softmax_row(const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    vec::row_kernels().softmax(x, y, n, false);
  } else {
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += (y[i] = std::exp(x[i] - mx));
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
  }
}

// r = y * (g - sum(g * y)), as kernels::softmax_backward computes it.
template <typename T>
void softmax_backward_row(const T* g, const T* y, T* r, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    vec::row_kernels().softmax_backward(g, y, r, n, false);
  } else {
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) acc += double(g[i]) * double(y[i]);
    const T dot = static_cast<T>(acc);
    for (int64_t i = 0; i < n; ++i) r[i] = y[i] * (g[i] - dot);
  }
}

// The mask of one batch entry: element (i, j) at data[i * si + j * sj] (null: no mask).
struct MaskView {
  const bool* data = nullptr;
  int64_t si = 0, sj = 0;
  bool at(int64_t i, int64_t j) const { return data && data[i * si + j * sj]; }
};

// row[j] = mask(i, j) ? fill : row[j] * scale over one row of n.
template <typename T>
void scale_or_fill(T* row, const MaskView& mask, int64_t i, T scale, T fill, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    if (mask.data && mask.sj == 1)
      return vec::row_kernels().scale_or_fill(row, mask.data + i * mask.si, scale, fill, n);
  }
  if (!mask.data) {
    for (int64_t j = 0; j < n; ++j) row[j] *= scale;
    return;
  }
  for (int64_t j = 0; j < n; ++j) row[j] = mask.at(i, j) ? fill : row[j] * scale;
}

struct Geometry {
  int64_t batch, t, s, d, dv;
};

template <typename T>
struct Inputs {
  Operand<T> q, k, v;
  Tensor mask;  // expanded to [*, T, S]
  std::vector<int64_t> mask_offset;
  double scale;
  Geometry g;

  MaskView mask_of(int64_t n) const {
    if (!mask.defined()) return {};
    return {data_of<const bool>(mask) + mask_offset[static_cast<size_t>(n)], mask.stride(-2),
            mask.stride(-1)};
  }
};

template <typename T>
Inputs<T> inputs_of(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                    double scale) {
  Inputs<T> in{operand<T>(q), operand<T>(k), operand<T>(v), Tensor(), {}, scale, {}};
  in.g = {static_cast<int64_t>(in.q.offset.size()), q.size(-2), k.size(-2), q.size(-1), v.size(-1)};
  if (mask.defined()) {
    IntList full = q.sizes();
    full.back() = k.size(-2);
    in.mask = mask.expand(full);
    in.mask_offset = batch_offsets(in.mask);
  }
  return in;
}

// p = softmax(mask(scale * (q @ k^T))) for batch entry n, `s` scratch of the same size.
template <typename T>
void attention_weights(const Inputs<T>& in, int64_t n, T* s, T* p) {
  const Geometry& g = in.g;
  const auto at = [](const Operand<T>& o, int64_t n) {
    return o.data + o.offset[static_cast<size_t>(n)];
  };
  product<T>('N', 'T', g.t, g.s, g.d, at(in.q, n), in.q.ld, at(in.k, n), in.k.ld, s, g.s);
  const MaskView mask = in.mask_of(n);
  const T scale = static_cast<T>(in.scale), minus_inf = -std::numeric_limits<T>::infinity();
  for (int64_t i = 0; i < g.t; ++i) {
    T* row = s + i * g.s;
    scale_or_fill<T>(row, mask, i, scale, minus_inf, g.s);
    softmax_row<T>(row, p + i * g.s, g.s);
  }
}

// This thread's scratch of at least n elements. Kept per thread (OpenMP's workers live as long as
// the process) and only grown, so a call neither maps fresh pages nor zeroes them, as blocks
// allocated per call (above malloc's mmap threshold) did.
// Above kKeptScratch bytes (long sequences) a call allocates its own, so no thread keeps that much
// after the call.
constexpr size_t kKeptScratch = size_t{8} << 20;

template <typename T>
T* thread_scratch(size_t n, std::vector<T>& owned) {
  thread_local std::vector<T> kept;
  std::vector<T>& buffer = n * sizeof(T) <= kKeptScratch ? kept : owned;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Runs body(n, scratch) for every batch entry; scratch holds `blocks` [T, S] blocks per thread.
// The first exception a thread throws (a failed allocation included) is rethrown after the team
// ends (none may leave it).
template <typename T, typename Body>
void over_batch(const Geometry& g, int blocks, const Body& body) {
  const size_t scratch = static_cast<size_t>(blocks) * static_cast<size_t>(g.t * g.s);
  if (g.batch >= omp_get_max_threads() && g.batch > 1) {
    std::exception_ptr failure;
#pragma omp parallel
    {
      std::vector<T> owned;
#pragma omp for schedule(static)
      for (int64_t n = 0; n < g.batch; ++n) {
        try {
          body(n, thread_scratch<T>(scratch, owned));
        } catch (...) {
#pragma omp critical(aotgrad_attention_failure)
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
    return;
  }
  std::vector<T> owned;
  T* buffer = thread_scratch<T>(scratch, owned);
  for (int64_t n = 0; n < g.batch; ++n) body(n, buffer);
}

template <typename T>
Tensor forward_typed(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                     double scale) {
  IntList out_sizes = q.sizes();
  out_sizes.back() = v.size(-1);
  Tensor out = make_tensor(out_sizes, q.dtype());
  if (out.numel() == 0) return out;
  const Inputs<T> in = inputs_of<T>(q, k, v, mask, scale);
  const Geometry& g = in.g;
  T* o = data_of<T>(out);
  over_batch<T>(g, 2, [&](int64_t n, T* scratch) {
    T *s = scratch, *p = scratch + g.t * g.s;
    if (g.s > 0) attention_weights(in, n, s, p);
    product<T>('N', 'N', g.t, g.dv, g.s, p, g.s, in.v.data + in.v.offset[static_cast<size_t>(n)],
               in.v.ld, o + n * g.t * g.dv, g.dv);
  });
  return out;
}

template <typename T>
std::array<Tensor, 3> backward_typed(const Tensor& grad_out, const Tensor& q, const Tensor& k,
                                     const Tensor& v, const Tensor& mask, double scale,
                                     std::array<bool, 3> need) {
  std::array<Tensor, 3> grads;
  const std::array<const Tensor*, 3> like{&q, &k, &v};
  for (size_t i = 0; i < 3; ++i)
    if (need[i]) grads[i] = make_tensor(like[i]->sizes(), like[i]->dtype());
  const Inputs<T> in = inputs_of<T>(q, k, v, mask, scale);
  const Operand<T> go = operand<T>(grad_out);
  const Geometry& g = in.g;
  T* dq = need[0] ? data_of<T>(grads[0]) : nullptr;
  T* dk = need[1] ? data_of<T>(grads[1]) : nullptr;
  T* dv = need[2] ? data_of<T>(grads[2]) : nullptr;
  const T scale_t = static_cast<T>(scale);
  over_batch<T>(g, 3, [&](int64_t n, T* scratch) {
    const size_t b = static_cast<size_t>(n);
    const T* gn = go.data + go.offset[b];
    T *s = scratch, *p = scratch + g.t * g.s, *ds = scratch + 2 * g.t * g.s;
    if (g.s > 0) attention_weights(in, n, s, p);
    // dv = p^T @ grad_out
    if (dv) product<T>('T', 'N', g.s, g.dv, g.t, p, g.s, gn, go.ld, dv + n * g.s * g.dv, g.dv);
    if (!dq && !dk) return;
    // dp = grad_out @ v^T (into s), then eager softmax's backward, the mask, the scale.
    product<T>('N', 'T', g.t, g.s, g.dv, gn, go.ld, in.v.data + in.v.offset[b], in.v.ld, s, g.s);
    // A masked entry's gradient is masked_fill's 0 times the scale (NaN for a NaN or infinite
    // scale, as the composite's mul backward makes it), not 0.
    const MaskView m = in.mask_of(n);
    for (int64_t i = 0; i < g.t && g.s > 0; ++i) {
      T* row = ds + i * g.s;
      softmax_backward_row<T>(s + i * g.s, p + i * g.s, row, g.s);
      scale_or_fill<T>(row, m, i, scale_t, T(0) * scale_t, g.s);
    }
    if (dq)
      product<T>('N', 'N', g.t, g.d, g.s, ds, g.s, in.k.data + in.k.offset[b], in.k.ld,
                 dq + n * g.t * g.d, g.d);
    if (dk)
      product<T>('T', 'N', g.s, g.d, g.t, ds, g.s, in.q.data + in.q.offset[b], in.q.ld,
                 dk + n * g.s * g.d, g.d);
  });
  return grads;
}

}  // namespace

Tensor masked_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                        double scale) {
  if (q.dtype() == DType::f32) return forward_typed<float>(q, k, v, mask, scale);
  if (q.dtype() == DType::f64) return forward_typed<double>(q, k, v, mask, scale);
  throw std::invalid_argument("masked_attention: expected f32 or f64 query, got " +
                              std::string(dtype_name(q.dtype())));
}

std::array<Tensor, 3> masked_attention_backward(const Tensor& grad_out, const Tensor& q,
                                                const Tensor& k, const Tensor& v,
                                                const Tensor& mask, double scale,
                                                std::array<bool, 3> need) {
  if (q.dtype() == DType::f32) return backward_typed<float>(grad_out, q, k, v, mask, scale, need);
  if (q.dtype() == DType::f64) return backward_typed<double>(grad_out, q, k, v, mask, scale, need);
  throw std::invalid_argument("masked_attention_backward: expected f32 or f64 query, got " +
                              std::string(dtype_name(q.dtype())));
}

}  // namespace aotgrad::kernels
