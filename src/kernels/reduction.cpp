// Reduction kernels.
//
// Reading guide: make_plan() splits the input's dims into kept dims (one output element per
// index, in the output's logical order) and reduced dims (sorted by stride and coalesced, so a
// contiguous reduction becomes one long run). run_reduce() then picks one of three loop orders:
//   full    one output element: the reduced range is split among threads, partials merged in
//           thread order (deterministic for a given thread count);
//   column  the kept dims form one strided run with a smaller stride than any reduced dim
//           (sum over the batch dim of [B, N]): the inner loop walks outputs, so reads stay
//           sequential instead of striding down columns;
//   row     otherwise: one output element at a time, the inner loop walks reduced runs.
// An accumulator policy (SumAcc, MaxAcc) supplies the arithmetic. f32 inputs take the vector row
// kernels of vec/rows.h where the loops are contiguous: a unit-stride run of a sum (into double) or
// of a max, and the column path of a sum (four rows per pass into double accumulators).
#include "kernels/reduction.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/parallel.h"
#include "kernels/vec/rows.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

struct Plan {
  IntList kept_sizes, kept_strides;            // output's logical order; strides are the input's
  IntList red_outer_sizes, red_outer_strides;  // reduced dims except the innermost run
  int64_t red_inner_size = 1, red_inner_stride = 0;
  bool has_red = false;  // false: every reduced dim has size 1 (or none was named)
  int64_t n_out = 1, n_red = 1;
};

Plan make_plan(const Tensor& a, const IntList& dims) {
  std::vector<bool> reduced(static_cast<size_t>(a.dim()), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  Plan p;
  std::vector<std::pair<int64_t, int64_t>> red;  // (size, stride)
  for (int64_t d = 0; d < a.dim(); ++d) {
    int64_t size = a.size(d), stride = a.stride(d);
    if (reduced[static_cast<size_t>(d)]) {
      p.n_red *= size;
      if (size != 1) red.emplace_back(size, stride);
    } else {
      p.n_out *= size;
      p.kept_sizes.push_back(size);
      p.kept_strides.push_back(stride);
    }
  }
  // Outer to inner by decreasing stride; then merge neighbours that form one arithmetic run.
  std::stable_sort(red.begin(), red.end(), [](auto x, auto y) { return x.second > y.second; });
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (auto r : red) {
    if (!merged.empty() && merged.back().second == r.second * r.first)
      merged.back() = {merged.back().first * r.first, r.second};
    else
      merged.push_back(r);
  }
  if (!merged.empty()) {
    p.has_red = true;
    p.red_inner_size = merged.back().first;
    p.red_inner_stride = merged.back().second;
    for (size_t i = 0; i + 1 < merged.size(); ++i) {
      p.red_outer_sizes.push_back(merged[i].first);
      p.red_outer_strides.push_back(merged[i].second);
    }
  }
  return p;
}

// Calls f(offset, stride, len) for runs covering [begin, end) of the reduced index space.
template <typename F>
void for_each_run(const Plan& p, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  if (!p.has_red) {
    f(int64_t{0}, int64_t{1}, int64_t{1});
    return;
  }
  const int64_t inner = p.red_inner_size, s = p.red_inner_stride;
  NdCounter<1> it(p.red_outer_sizes, {&p.red_outer_strides}, {0});
  it.seek(begin / inner);
  int64_t col = begin % inner;
  for (int64_t pos = begin; pos < end; it.next()) {
    int64_t len = std::min(inner - col, end - pos);
    f(it[0] + col * s, s, len);
    pos += len;
    col = 0;
  }
}

// If the kept dims (ignoring size 1) form one arithmetic run, its stride; otherwise -1.
int64_t kept_run_stride(const Plan& p) {
  int64_t stride = -1, span = 0;
  for (size_t i = p.kept_sizes.size(); i-- > 0;) {
    if (p.kept_sizes[i] == 1) continue;
    if (stride < 0) {
      stride = p.kept_strides[i];
      span = stride * p.kept_sizes[i];
    } else if (p.kept_strides[i] == span) {
      span *= p.kept_sizes[i];
    } else {
      return -1;
    }
  }
  return stride;
}

template <typename Acc>
struct SumAcc {
  Acc v = 0;
  template <typename T>
  void add(T x) {
    v += convert<Acc>(x);
  }
  template <typename T>
  void run(const T* q, int64_t stride, int64_t len) {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Acc, double>) {
      if (stride == 1) {
        v += vec::row_kernels().sum(q, len);
        return;
      }
    }
    if (stride != 1) {
      for (int64_t i = 0; i < len; ++i) v += convert<Acc>(q[i * stride]);
      return;
    }
    // Four independent partial sums: breaks the add dependency chain and halves rounding error.
    Acc s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= len; i += 4) {
      s0 += convert<Acc>(q[i]);
      s1 += convert<Acc>(q[i + 1]);
      s2 += convert<Acc>(q[i + 2]);
      s3 += convert<Acc>(q[i + 3]);
    }
    for (; i < len; ++i) s0 += convert<Acc>(q[i]);
    v += (s0 + s1) + (s2 + s3);
  }
  void merge(const SumAcc& o) { v += o.v; }
};

template <typename Acc>
struct MaxAcc {
  Acc v = std::numeric_limits<Acc>::lowest();
  static bool is_nan(Acc x) {
    if constexpr (std::is_floating_point_v<Acc>)
      return std::isnan(x);
    else
      return false;
  }
  // Branch-free so that loops over it vectorize (compare + blend).
  static Acc pick(Acc v, Acc x) { return (x > v || is_nan(x)) ? x : v; }
  template <typename T>
  void add(T raw) {
    v = pick(v, convert<Acc>(raw));  // once v is NaN nothing compares greater: NaN sticks
  }
  template <typename T>
  void run(const T* q, int64_t stride, int64_t len) {
    if constexpr (std::is_same_v<T, float> && std::is_same_v<Acc, float>) {
      if (stride == 1) {
        add(vec::row_kernels().max(q, len));  // NaN in the run: NaN, which then sticks
        return;
      }
    }
    int64_t i = 0;
    if (stride == 1) {
      // Eight independent lanes: no loop-carried dependency on a single maximum.
      Acc m[8];
      for (Acc& x : m) x = v;
      for (; i + 8 <= len; i += 8)
        for (int l = 0; l < 8; ++l) m[l] = pick(m[l], convert<Acc>(q[i + l]));
      for (Acc x : m) v = pick(v, x);
    }
    for (; i < len; ++i) add(q[i * stride]);
  }
  void merge(const MaxAcc& o) { add(o.v); }
};

template <typename Policy, typename T, typename Finish>
void reduce_full(const T* in, const Plan& p, Finish&& finish) {
  const int64_t n = p.n_red;
  const int threads = n > kParallelWork ? omp_get_max_threads() : 1;
  std::vector<Policy> partial(static_cast<size_t>(threads));
  auto part = [&](int tid, int nt) {
    Policy& acc = partial[static_cast<size_t>(tid)];
    for_each_run(p, part_begin(n, tid, nt), part_begin(n, tid + 1, nt),
                 [&](int64_t off, int64_t s, int64_t len) { acc.run(in + off, s, len); });
  };
  if (threads == 1) {
    part(0, 1);  // no team: libgomp allocates one even for a region that stays serial
  } else {
#pragma omp parallel num_threads(threads)
    part(omp_get_thread_num_safe(), omp_get_num_threads_safe());
  }
  Policy total;
  for (const Policy& x : partial) total.merge(x);
  finish(0, total);
}

template <typename Policy, typename T, typename Finish>
void reduce_rows(const T* in, const Plan& p, Finish&& finish) {
  const int64_t n = p.n_out;
#pragma omp parallel if (n * p.n_red > kParallelWork)
  {
    int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
    int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
    if (begin < end) {
      NdCounter<1> it(p.kept_sizes, {&p.kept_strides}, {0});
      it.seek(begin);
      for (int64_t o = begin; o < end; ++o, it.next()) {
        Policy acc;
        const T* base = in + it[0];
        for_each_run(p, 0, p.n_red,
                     [&](int64_t off, int64_t s, int64_t len) { acc.run(base + off, s, len); });
        finish(o, acc);
      }
    }
  }
}

constexpr int64_t kColumnBlock = 4096;  // long sequential reads; 32 KB of double accumulators

// reduce_columns for an f32 sum over contiguous kept columns: rows added into double
// accumulators by the vector kernel.
template <typename Finish>
void sum_columns_f32(const float* in, const Plan& p, Finish&& finish) {
  const int64_t n = p.n_out;
  const auto add_rows = vec::row_kernels().add_rows;
#pragma omp parallel if (n * p.n_red > kParallelWork)
  {
    int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
    int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
    std::vector<double> acc;
    for (int64_t b0 = begin; b0 < end; b0 += kColumnBlock) {
      int64_t len = std::min(kColumnBlock, end - b0);
      acc.assign(static_cast<size_t>(len), 0.0);
      const float* base = in + b0;
      for_each_run(p, 0, p.n_red, [&](int64_t off, int64_t s, int64_t rlen) {
        add_rows(acc.data(), base + off, s, rlen, len);
      });
      for (int64_t o = 0; o < len; ++o) {
        SumAcc<double> total;
        total.v = acc[static_cast<size_t>(o)];
        finish(b0 + o, total);
      }
    }
  }
}

template <typename Policy, typename T, typename Finish>
void reduce_columns(const T* in, const Plan& p, int64_t ks, Finish&& finish) {
  if constexpr (std::is_same_v<Policy, SumAcc<double>> && std::is_same_v<T, float>) {
    if (ks == 1) return sum_columns_f32(in, p, finish);
  }
  constexpr int64_t kBlock = kColumnBlock;
  const int64_t n = p.n_out;
#pragma omp parallel if (n * p.n_red > kParallelWork)
  {
    int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
    int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
    std::vector<Policy> acc;
    for (int64_t b0 = begin; b0 < end; b0 += kBlock) {
      int64_t len = std::min(kBlock, end - b0);
      acc.assign(static_cast<size_t>(len), Policy());
      const T* base = in + b0 * ks;
      for_each_run(p, 0, p.n_red, [&](int64_t off, int64_t s, int64_t rlen) {
        Policy* a = acc.data();
        for (int64_t r = 0; r < rlen; ++r) {
          const T* q = base + off + r * s;
          if (ks == 1) {
#pragma omp simd
            for (int64_t o = 0; o < len; ++o) a[o].add(q[o]);
          } else {
            for (int64_t o = 0; o < len; ++o) a[o].add(q[o * ks]);
          }
        }
      });
      for (int64_t o = 0; o < len; ++o) finish(b0 + o, acc[static_cast<size_t>(o)]);
    }
  }
}

template <typename Policy, typename T, typename Finish>
void run_reduce(const T* in, const Plan& p, Finish&& finish) {
  if (p.n_out == 0) return;
  if (p.n_out == 1) return reduce_full<Policy>(in, p, finish);
  int64_t ks = kept_run_stride(p);
  if (p.has_red && ks >= 0 && ks < p.red_inner_stride)
    return reduce_columns<Policy>(in, p, ks, finish);
  reduce_rows<Policy>(in, p, finish);
}

// Shared by sum and mean: accumulates in double for floating outputs, int64 otherwise.
Tensor sum_like(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype, bool mean) {
  Plan p = make_plan(a, dims);
  Tensor out = make_tensor(reduced_sizes(a.sizes(), dims, keepdim), out_dtype);
  // An empty mean is 0 * inf = NaN, as in torch.
  const double inv_count = 1.0 / static_cast<double>(p.n_red);
  visit_dtype(a.dtype(), [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    const T* in = reinterpret_cast<const T*>(a.impl()->data_bytes());
    visit_dtype(out_dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      using Acc = std::conditional_t<std::is_same_v<Out, int64_t> || std::is_same_v<Out, bool>,
                                     int64_t, double>;
      Out* o = reinterpret_cast<Out*>(out.impl()->data_bytes());
      run_reduce<SumAcc<Acc>>(in, p, [&](int64_t i, const SumAcc<Acc>& acc) {
        if constexpr (std::is_same_v<Acc, double>)
          o[i] = convert<Out>(mean ? acc.v * inv_count : acc.v);
        else
          o[i] = convert<Out>(acc.v);
      });
    });
  });
  return out;
}

}  // namespace

IntList reduced_sizes(const IntList& sizes, const IntList& dims, bool keepdim) {
  std::vector<bool> reduced(sizes.size(), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  IntList out;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!reduced[d])
      out.push_back(sizes[d]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

Tensor sum(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype) {
  return sum_like(a, dims, keepdim, out_dtype, /*mean=*/false);
}

Tensor mean(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype) {
  return sum_like(a, dims, keepdim, out_dtype, /*mean=*/true);
}

Tensor amax(const Tensor& a, const IntList& dims, bool keepdim) {
  Plan p = make_plan(a, dims);
  Tensor out = make_tensor(reduced_sizes(a.sizes(), dims, keepdim), a.dtype());
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Acc =
        std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
    const T* in = reinterpret_cast<const T*>(a.impl()->data_bytes());
    T* o = reinterpret_cast<T*>(out.impl()->data_bytes());
    run_reduce<MaxAcc<Acc>>(in, p,
                            [&](int64_t i, const MaxAcc<Acc>& acc) { o[i] = convert<T>(acc.v); });
  });
  return out;
}

}  // namespace aotgrad::kernels
