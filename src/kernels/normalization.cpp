// Layer norm and dropout kernels.
//
// Reading guide: layer norm works on contiguous rows in its compute type (float for f32/f16/bf16,
// double for f64): as_dense() makes such a copy only when the input is strided or 16-bit.
// Row statistics accumulate in double in two passes, mean then squared deviations (f32: vector
// kernels, vec/rows.h), so an f32 row of any length is exact to rounding. The
// backward computes grad_input row by row in parallel; grad_weight / grad_bias are column sums over
// rows, accumulated per thread in the compute type (as ATen) in the same pass, and merged in thread
// order (deterministic for a given thread count). Dropout draws one 32-bit Philox word per element:
// element k uses word k % 4 of block k / 4, so a mask is a pure function of (seed, offset, k) and
// parallel fills replay exactly.
#include "kernels/normalization.h"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "kernels/arith.h"
#include "kernels/copy.h"
#include "kernels/data.h"
#include "kernels/elementwise.h"
#include "kernels/parallel.h"
#include "kernels/random.h"
#include "kernels/vec/rows.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/promotion.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

// `t` as a contiguous tensor of `dtype` (t itself when it already is one).
Tensor as_dense(const Tensor& t, DType dtype) {
  if (!t.defined()) return t;
  return t.is_contiguous() && t.dtype() == dtype ? t : contiguous_copy(t, dtype);
}

// A fresh contiguous result of `dtype` written in compute type `compute`: the tensor to write
// into, and finish() to get the result (a conversion only when the two differ).
struct Staged {
  Tensor target, buffer;
  Staged(const IntList& sizes, DType dtype, DType compute)
      : target(make_tensor(sizes, dtype)),
        buffer(dtype == compute ? target : make_tensor(sizes, compute)) {}
  Tensor finish() {
    if (!buffer.is_same(target)) copy_into(target, buffer);
    return target;
  }
};

template <typename T>
const T* cdata(const Tensor& t) {
  return t.defined() ? data_of<const T>(t) : nullptr;
}
// f32 rows: the vector kernels, two passes over the row for the statistics (in double), one
// to normalize.
void layer_norm_rows_f32(const float* x, const float* w, const float* b, float* y, float* mean,
                         float* rstd, int64_t m, int64_t n, double eps) {
  const vec::RowKernels& k = vec::row_kernels();
#pragma omp parallel for if (m * n > kParallelWork)
  for (int64_t r = 0; r < m; ++r) {
    double mu = 0, m2 = 0;
    k.moments(x + r * n, n, &mu, &m2);
    // An empty row has mean 0 and rstd NaN (0/0 variance), exactly what torch returns.
    const double rs = 1.0 / std::sqrt(m2 / static_cast<double>(n) + eps);
    mean[r] = static_cast<float>(mu);
    rstd[r] = static_cast<float>(rs);
    k.normalize(x + r * n, mean[r], rstd[r], w, b, y + r * n, n);
  }
}

template <typename T>
void layer_norm_rows(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, int64_t m,
                     int64_t n, double eps) {
  if constexpr (std::is_same_v<T, float>)
    return layer_norm_rows_f32(x, w, b, y, mean, rstd, m, n, eps);
#pragma omp parallel for if (m * n > kParallelWork)
  for (int64_t r = 0; r < m; ++r) {
    const T* xr = x + r * n;
    T* yr = y + r * n;
    double s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < n; ++j) s += static_cast<double>(xr[j]);
    // An empty row has mean 0 and rstd NaN (0/0 variance), exactly what torch returns.
    const double mu = n > 0 ? s / static_cast<double>(n) : 0.0;
    double q = 0;
#pragma omp simd reduction(+ : q)
    for (int64_t j = 0; j < n; ++j) {
      double d = static_cast<double>(xr[j]) - mu;
      q += d * d;
    }
    const double rs = 1.0 / std::sqrt(q / static_cast<double>(n) + eps);
    mean[r] = static_cast<T>(mu);
    rstd[r] = static_cast<T>(rs);
    const T tm = static_cast<T>(mu), tr = static_cast<T>(rs);
    if (w && b) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - tm) * tr * w[j] + b[j];
    } else if (w) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - tm) * tr * w[j];
    } else if (b) {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - tm) * tr + b[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - tm) * tr;
    }
  }
}

// One row of the backward: dx = rstd * (g*w - mean(g*w) - xhat * mean(g*w * xhat)), and
// pw += g * xhat, pb += g (column sums over rows, per thread). kWeight / kDx / kParams pick the
// loop at compile time, so the inner loops carry no branches and vectorize.
template <typename T, bool kWeight, bool kDx, bool kParams>
void layer_norm_backward_row(const T* g, const T* x, T mu, T rs, const T* w, T* dx, T* pw, T* pb,
                             int64_t n) {
  T c1 = 0, c2 = 0;
  if constexpr (kDx) {
    double sum_gw = 0, sum_gw_xhat = 0;
#pragma omp simd reduction(+ : sum_gw, sum_gw_xhat)
    for (int64_t j = 0; j < n; ++j) {
      T gw = kWeight ? g[j] * w[j] : g[j];
      sum_gw += static_cast<double>(gw);
      sum_gw_xhat += static_cast<double>(gw * ((x[j] - mu) * rs));
    }
    c1 = static_cast<T>(sum_gw / static_cast<double>(n));
    c2 = static_cast<T>(sum_gw_xhat / static_cast<double>(n));
  }
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const T xhat = (x[j] - mu) * rs;
    if constexpr (kDx) dx[j] = rs * ((kWeight ? g[j] * w[j] : g[j]) - c1 - xhat * c2);
    if constexpr (kParams) {
      pw[j] += g[j] * xhat;
      pb[j] += g[j];
    }
  }
}

template <typename T, bool kWeight, bool kDx, bool kParams>
void layer_norm_backward_rows(const T* g, const T* x, const T* mean, const T* rstd, const T* w,
                              T* dx, T* dw, T* db, int64_t m, int64_t n) {
  // Per-thread column sums in the compute type, as ATen: one buffer row per thread, so the row
  // loop stays a single pass over g and x.
  std::vector<T> partial;
#pragma omp parallel if (m * n > kParallelWork)
  {
    const int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
#pragma omp single
    partial.assign(kParams ? static_cast<size_t>(nt * 2 * n) : 0, T(0));
    T* pw = kParams ? partial.data() + static_cast<size_t>(tid * 2 * n) : nullptr;
    T* pb = kParams ? pw + n : nullptr;
    const int64_t begin = part_begin(m, tid, nt), end = part_begin(m, tid + 1, nt);
    if constexpr (std::is_same_v<T, float>) {
      // f32: the vector kernel (vec/rows.h), same formula.
      const auto row = vec::row_kernels().layer_norm_backward;
      for (int64_t r = begin; r < end; ++r)
        row(g + r * n, x + r * n, mean[r], rstd[r], kWeight ? w : nullptr,
            kDx ? dx + r * n : nullptr, pw, pb, n);
    } else {
      for (int64_t r = begin; r < end; ++r)
        layer_norm_backward_row<T, kWeight, kDx, kParams>(g + r * n, x + r * n, mean[r], rstd[r], w,
                                                          kDx ? dx + r * n : nullptr, pw, pb, n);
    }
  }
  if constexpr (kParams) {
    const int64_t threads = n > 0 ? static_cast<int64_t>(partial.size()) / (2 * n) : 0;
    for (int64_t j = 0; j < n; ++j) {
      T sw = 0, sb = 0;
      for (int64_t t = 0; t < threads; ++t) {
        sw += partial[static_cast<size_t>(t * 2 * n + j)];
        sb += partial[static_cast<size_t>(t * 2 * n + n + j)];
      }
      if (dw) dw[j] = sw;
      if (db) db[j] = sb;
    }
  }
}

// Picks the instantiation for which of weight / dx / (dw or db) are present.
template <typename T>
void layer_norm_backward_dispatch(const T* g, const T* x, const T* mean, const T* rstd, const T* w,
                                  T* dx, T* dw, T* db, int64_t m, int64_t n) {
  auto run = [&]<bool kWeight, bool kDx, bool kParams>() {
    layer_norm_backward_rows<T, kWeight, kDx, kParams>(g, x, mean, rstd, w, dx, dw, db, m, n);
  };
  const bool params = dw || db;
  if (w) {
    if (dx && params)
      run.template operator()<true, true, true>();
    else if (dx)
      run.template operator()<true, true, false>();
    else if (params)
      run.template operator()<true, false, true>();
  } else {
    if (dx && params)
      run.template operator()<false, true, true>();
    else if (dx)
      run.template operator()<false, true, false>();
    else if (params)
      run.template operator()<false, false, true>();
  }
}

}  // namespace

LayerNormResult layer_norm(const Tensor& input, int64_t n, const Tensor& weight, const Tensor& bias,
                           double eps, const IntList& stat_sizes, DType stat_dtype) {
  const DType compute = compute_dtype(input.dtype());
  const int64_t m = n > 0 ? input.numel() / n : numel_of(stat_sizes);
  Tensor x = as_dense(input, compute), w = as_dense(weight, compute), b = as_dense(bias, compute);
  Staged out(input.sizes(), input.dtype(), compute);
  Staged mean(stat_sizes, stat_dtype, compute), rstd(stat_sizes, stat_dtype, compute);
  visit_float(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_rows<T>(cdata<T>(x), cdata<T>(w), cdata<T>(b), data_of<T>(out.buffer),
                       data_of<T>(mean.buffer), data_of<T>(rstd.buffer), m, n, eps);
  });
  return {out.finish(), mean.finish(), rstd.finish()};
}

std::array<Tensor, 3> layer_norm_backward(const Tensor& grad_out, const Tensor& input,
                                          const Tensor& mean, const Tensor& rstd,
                                          const Tensor& weight, int64_t n,
                                          const std::array<bool, 3>& output_mask,
                                          const IntList& param_sizes, DType param_dtype) {
  const DType compute = compute_dtype(input.dtype());
  const int64_t m = n > 0 ? input.numel() / n : mean.numel();
  Tensor g = as_dense(grad_out, compute), x = as_dense(input, compute);
  Tensor mu = as_dense(mean, compute), rs = as_dense(rstd, compute), w = as_dense(weight, compute);
  auto staged = [&](bool wanted, const IntList& sizes, DType dtype) {
    return wanted ? Staged(sizes, dtype, compute) : Staged({0}, dtype, dtype);
  };
  Staged dx = staged(output_mask[0], input.sizes(), input.dtype());
  Staged dw = staged(output_mask[1], param_sizes, param_dtype);
  Staged db = staged(output_mask[2], param_sizes, param_dtype);
  visit_float(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    layer_norm_backward_dispatch<T>(cdata<T>(g), cdata<T>(x), cdata<T>(mu), cdata<T>(rs),
                                    cdata<T>(w), output_mask[0] ? data_of<T>(dx.buffer) : nullptr,
                                    output_mask[1] ? data_of<T>(dw.buffer) : nullptr,
                                    output_mask[2] ? data_of<T>(db.buffer) : nullptr, m, n);
  });
  return {dx.finish(), dw.finish(), db.finish()};
}

// The mask from the Philox stream, then the masked scaling of dropout_backward: the functional
// form a trace records (mask op + dropout_backward) is then the same arithmetic, bit for bit, in
// every dtype.
std::pair<Tensor, Tensor> dropout(const Tensor& input, double keep_prob, uint64_t seed,
                                  uint64_t block_offset) {
  Tensor mask = dropout_mask(input.sizes(), keep_prob, seed, block_offset);
  const double scale = keep_prob == 0 ? 0.0 : 1.0 / keep_prob;
  return {dropout_backward(input, mask, scale), mask};
}

Tensor dropout_backward(const Tensor& grad, const Tensor& mask, double scale) {
  Tensor out = make_tensor(grad.sizes(), grad.dtype());
  visit_float(grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T s = static_cast<T>(scale);
    elementwise::run<T, T, bool>(out, {grad, mask},
                                 [s](T g, bool keep) -> T { return g * static_cast<T>(keep) * s; });
  });
  return out;
}

}  // namespace aotgrad::kernels
