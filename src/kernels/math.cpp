// Math kernels: pointwise clamp / abs / sign through the elementwise engine, and lane-wise
// reductions and scans (max/min along a dim, argmax, var/std, logsumexp, cumsum).
//
// Reading guide: a lane-wise op sees its input as independent lanes, one per output element (or,
// for cumsum, one per output lane): make_lanes() finds, for the dims being reduced, a single
// strided run `len` elements long, `stride` apart, starting at an offset that an NdCounter over
// the kept dims produces. When the reduced dims do not form one run (a permuted input reduced
// over two dims), the input is first copied so that they do. for_each_lane() splits the lanes
// among OpenMP threads; each lane is then a tight loop over a pointer and a stride.
// Order-sensitive ops (argmax, max/min, cumsum) walk lanes in logical order; var and logsumexp
// may walk them in memory order, which avoids copies of transposed inputs.
#include "kernels/math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/arith.h"
#include "kernels/copy.h"
#include "kernels/data.h"
#include "kernels/elementwise.h"
#include "kernels/parallel.h"
#include "kernels/vec/vec.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

template <typename T>
constexpr bool kIsHalf = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The type a stored element of type T is compared and summed in.
template <typename T>
using Compute = std::conditional_t<kIsHalf<T>, float, T>;

template <typename T>
bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>)
    return std::isnan(x);
  else
    return false;
}

struct Lanes {
  Tensor src;                        // the input, or a copy of it whose reduced dims form one run
  IntList kept_sizes, kept_strides;  // in src, kept dims in logical order
  IntList out_strides;               // where lane o's result (or first result) goes in the output
  int64_t len = 1, stride = 0;       // the run of one lane
  int64_t count = 1;                 // number of lanes
};

// Lanes of `a` over `dims` (wrapped, distinct). `out_strides` are the output's strides for the
// kept dims (for a reduction, the contiguous strides of the kept sizes). With `keep_order`, a
// lane visits its elements in logical (row-major) order.
Lanes make_lanes(const Tensor& a, const IntList& dims, const IntList& out_strides,
                 bool keep_order) {
  std::vector<bool> reduced(static_cast<size_t>(a.dim()), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  Lanes l;
  l.src = a;
  l.out_strides = out_strides;
  std::vector<std::pair<int64_t, int64_t>> run;  // (size, stride) of reduced dims, outer first
  IntList perm;                                  // kept dims, then reduced dims
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (reduced[static_cast<size_t>(d)]) continue;
    perm.push_back(d);
    l.kept_sizes.push_back(a.size(d));
    l.kept_strides.push_back(a.stride(d));
    l.count *= a.size(d);
  }
  for (int64_t d : dims) {
    l.len *= a.size(d);
    if (a.size(d) != 1) run.emplace_back(a.size(d), a.stride(d));
  }
  if (l.len == 0 || run.empty()) return l;
  if (!keep_order)
    std::stable_sort(run.begin(), run.end(), [](auto x, auto y) { return x.second > y.second; });
  bool one_run = true;
  for (size_t i = 0; i + 1 < run.size(); ++i)
    one_run = one_run && run[i].second == run[i + 1].second * run[i + 1].first;
  if (one_run) {
    l.stride = run.back().second;
    return l;
  }
  // Copy with the reduced dims innermost (in logical order): each lane is then contiguous.
  IntList sorted_dims = dims;
  std::sort(sorted_dims.begin(), sorted_dims.end());
  perm.insert(perm.end(), sorted_dims.begin(), sorted_dims.end());
  IntList sizes, strides;
  for (int64_t d : perm) {
    sizes.push_back(a.size(d));
    strides.push_back(a.stride(d));
  }
  l.src = contiguous_copy(make_view(a, sizes, strides, a.storage_offset()), a.dtype());
  IntList copy_strides = contiguous_strides(sizes);
  l.kept_strides.assign(copy_strides.begin(), copy_strides.begin() + l.kept_sizes.size());
  l.stride = 1;
  return l;
}

// Calls f(in_offset, out_offset) for every lane, lanes split among threads.
template <typename F>
void for_each_lane(const Lanes& l, F&& f) {
  const int64_t n = l.count;
  if (n == 0) return;
#pragma omp parallel if (n > 1 && n * std::max <int64_t>(l.len, 1) > kParallelWork)
  {
    const int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
    const int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
    if (begin < end) {
      NdCounter<2> it(l.kept_sizes, {&l.kept_strides, &l.out_strides}, {0, 0});
      it.seek(begin);
      for (int64_t o = begin; o < end; ++o, it.next()) f(it[0], it[1]);
    }
  }
}

// Sum of p[j * stride] over the lane, in double.
template <typename T>
double lane_sum(const T* p, int64_t len, int64_t stride) {
  double s = 0;
  if (stride == 1) {
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < len; ++j) s += convert<double>(p[j]);
  } else {
    for (int64_t j = 0; j < len; ++j) s += convert<double>(p[j * stride]);
  }
  return s;
}

IntList reduced_shape(const Tensor& a, const IntList& dims, bool keepdim) {
  std::vector<bool> reduced(static_cast<size_t>(a.dim()), false);
  for (int64_t d : dims) reduced[static_cast<size_t>(d)] = true;
  IntList out;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (!reduced[static_cast<size_t>(d)])
      out.push_back(a.size(d));
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// Contiguous strides of the kept dims: where lane o's single result goes.
IntList kept_out_strides(const Tensor& a, const IntList& dims) {
  return contiguous_strides(reduced_shape(a, dims, /*keepdim=*/false));
}

template <typename T, typename Op>
Tensor map_to(const Tensor& a, DType out_dtype, const Op& op) {
  Tensor out = make_tensor(a.sizes(), out_dtype);
  elementwise::run<T, T>(out, {a}, op);
  return out;
}

}  // namespace

Tensor clamp(const Tensor& a, const std::optional<Scalar>& lo, const std::optional<Scalar>& hi,
             DType out_dtype) {
  return visit_compute(out_dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Comparisons written so that a NaN input fails both and passes through, as max/min do.
    if (lo && hi) {
      const T l = elementwise::scalar_as<T>(*lo), h = elementwise::scalar_as<T>(*hi);
      return map_to<T>(a, out_dtype, [l, h](T x) -> T {
        T r = x < l ? l : x;
        return r > h ? h : r;
      });
    }
    if (lo) {
      const T l = elementwise::scalar_as<T>(*lo);
      return map_to<T>(a, out_dtype, [l](T x) -> T { return x < l ? l : x; });
    }
    const T h = elementwise::scalar_as<T>(*hi);
    return map_to<T>(a, out_dtype, [h](T x) -> T { return x > h ? h : x; });
  });
}

Tensor abs(const Tensor& a) {
  return visit_compute(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return map_to<T>(a, a.dtype(), [](T x) -> T {
      if constexpr (std::is_same_v<T, bool>)
        return x;
      else if constexpr (std::is_integral_v<T>)
        return x < 0 ? arith::neg(x) : x;  // wraps at INT64_MIN, like torch
      else
        return std::abs(x);
    });
  });
}

Tensor sign(const Tensor& a) {
  return visit_compute(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return map_to<T>(a, a.dtype(), [](T x) -> T {
      if constexpr (std::is_same_v<T, bool>)
        return x;
      else
        return static_cast<T>(static_cast<int>(T(0) < x) - static_cast<int>(x < T(0)));
    });
  });
}

// Position of the first maximum (is_max) or minimum of a lane of `len` elements `s` apart; a
// NaN wins, as in PyTorch.
template <typename C, typename T>
int64_t best_in_lane(const T* p, int64_t len, int64_t s, bool is_max) {
  C best = convert<C>(p[0]);
  int64_t best_j = 0;
  for (int64_t j = 1; j < len && !is_nan(best); ++j) {
    C x = convert<C>(p[j * s]);
    if (is_nan(x) || (is_max ? x > best : x < best)) {
      best = x;
      best_j = j;
    }
  }
  return best_j;
}

std::pair<Tensor, Tensor> max_min_dim(const Tensor& a, int64_t dim, bool keepdim, bool is_max) {
  const IntList dims{dim};
  Lanes l = make_lanes(a, dims, kept_out_strides(a, dims), /*keep_order=*/true);
  IntList shape = reduced_shape(a, dims, keepdim);
  Tensor values = make_tensor(shape, a.dtype());
  Tensor indices = make_tensor(shape, DType::i64);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T* in = data_of<T>(l.src);
    T* v = data_of<T>(values);
    int64_t* ix = data_of<int64_t>(indices);
    const int64_t len = l.len, s = l.stride;
    for_each_lane(l, [&](int64_t off, int64_t o) {
      const T* p = in + off;
      const int64_t best_j = best_in_lane<C>(p, len, s, is_max);
      v[o] = p[best_j * s];
      ix[o] = best_j;
    });
  });
  return {values, indices};
}

Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim, bool is_max) {
  IntList dims;
  if (dim) {
    dims.push_back(*dim);
  } else {
    for (int64_t d = 0; d < a.dim(); ++d) dims.push_back(d);
  }
  Lanes l = make_lanes(a, dims, kept_out_strides(a, dims), /*keep_order=*/true);
  Tensor out = make_tensor(reduced_shape(a, dims, keepdim), DType::i64);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = Compute<T>;
    const T* in = data_of<T>(l.src);
    int64_t* ix = data_of<int64_t>(out);
    const int64_t len = l.len, s = l.stride;
    for_each_lane(
        l, [&](int64_t off, int64_t o) { ix[o] = best_in_lane<C>(in + off, len, s, is_max); });
  });
  return out;
}

Tensor var(const Tensor& a, const IntList& dims, double correction, bool keepdim, bool take_sqrt) {
  Lanes l = make_lanes(a, dims, kept_out_strides(a, dims), /*keep_order=*/false);
  Tensor out = make_tensor(reduced_shape(a, dims, keepdim), a.dtype());
  // An empty lane gives 0/0 = NaN; n <= correction gives x/0 = inf (NaN when x is 0), as torch.
  const double denom = std::max(0.0, static_cast<double>(l.len) - correction);
  visit_dtype(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = data_of<T>(l.src);
    T* o_data = data_of<T>(out);
    const int64_t len = l.len, s = l.stride;
    for_each_lane(l, [&](int64_t off, int64_t o) {
      const T* p = in + off;
      // Two passes in double: no cancellation, unlike sum(x^2) - n * mean^2.
      const double mean = lane_sum(p, len, s) / static_cast<double>(len);
      double q = 0;
      if (s == 1) {
#pragma omp simd reduction(+ : q)
        for (int64_t j = 0; j < len; ++j) {
          double d = convert<double>(p[j]) - mean;
          q += d * d;
        }
      } else {
        for (int64_t j = 0; j < len; ++j) {
          double d = convert<double>(p[j * s]) - mean;
          q += d * d;
        }
      }
      double r = q / denom;
      o_data[o] = convert<T>(take_sqrt ? std::sqrt(r) : r);
    });
  });
  return out;
}

Tensor logsumexp(const Tensor& a, const IntList& dims, bool keepdim, DType out_dtype) {
  Lanes l = make_lanes(a, dims, kept_out_strides(a, dims), /*keep_order=*/false);
  Tensor out = make_tensor(reduced_shape(a, dims, keepdim), out_dtype);
  if (l.len == 0) {
    // log of an empty sum: -inf everywhere. (An empty input has no data: offsets into it would
    // be arithmetic on a null pointer.)
    visit_dtype(out_dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      Out* o = data_of<Out>(out);
      for (int64_t i = 0; i < out.numel(); ++i)
        o[i] = convert<Out>(-std::numeric_limits<double>::infinity());
    });
    return out;
  }
  visit_dtype(a.dtype(), [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    // exp runs in the result's compute type (float for f32, as ATen); the sum in double.
    visit_float(out_dtype, [&](auto compute_tag) {
      using C = typename decltype(compute_tag)::type;
      const T* in = data_of<T>(l.src);
      char* o_bytes = out.impl()->data_bytes();
      const int64_t len = l.len, s = l.stride;
      for_each_lane(l, [&](int64_t off, int64_t o) {
        const T* p = in + off;
        C m = -std::numeric_limits<C>::infinity();
        for (int64_t j = 0; j < len; ++j) {
          C x = convert<C>(p[j * s]);
          m = (x > m || x != x) ? x : m;  // a NaN sticks: nothing compares greater than it
        }
        // ATen shifts by 0 when the maximum is infinite: inf stays inf, all -inf gives -inf.
        if (std::isinf(m)) m = 0;
        double sum = 0;
        if (s == 1 && std::is_same_v<T, C>) {
          // exp(x - m) by the vector kernel, a chunk at a time; the sum stays in double.
          const auto exp = vec::active().of<C>()[vec::UnaryFn::exp];
          C buf[256];
          for (int64_t j0 = 0; j0 < len; j0 += 256) {
            const int64_t n = std::min<int64_t>(256, len - j0);
            for (int64_t j = 0; j < n; ++j) buf[j] = convert<C>(p[j0 + j]) - m;
            exp(buf, buf, n, C(0));
            for (int64_t j = 0; j < n; ++j) sum += static_cast<double>(buf[j]);
          }
        } else if (s == 1) {
          for (int64_t j = 0; j < len; ++j)
            sum += static_cast<double>(std::exp(convert<C>(p[j]) - m));
        } else {
          for (int64_t j = 0; j < len; ++j)
            sum += static_cast<double>(std::exp(convert<C>(p[j * s]) - m));
        }
        const double r = std::log(sum) + static_cast<double>(m);
        visit_dtype(out_dtype, [&](auto out_tag) {
          using Out = typename decltype(out_tag)::type;
          reinterpret_cast<Out*>(o_bytes)[o] = convert<Out>(r);
        });
      });
    });
  });
  return out;
}

Tensor cumsum(const Tensor& a, int64_t dim, DType out_dtype) {
  Tensor out = make_tensor(a.sizes(), out_dtype);
  if (a.dim() == 0) {
    copy_into(out, a);
    return out;
  }
  IntList out_strides = out.strides();
  const int64_t out_stride = out_strides[static_cast<size_t>(dim)];
  out_strides.erase(out_strides.begin() + dim);
  Lanes l = make_lanes(a, {dim}, out_strides, /*keep_order=*/true);
  visit_dtype(a.dtype(), [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    visit_dtype(out_dtype, [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      // Floating results accumulate in double, integral and bool ones in int64 (as ATen).
      using Acc = std::conditional_t<std::is_integral_v<Out>, int64_t, double>;
      const T* in = data_of<T>(l.src);
      Out* o_data = data_of<Out>(out);
      const int64_t len = l.len, s = l.stride;
      for_each_lane(l, [&](int64_t off, int64_t o) {
        const T* p = in + off;
        Out* q = o_data + o;
        Acc acc = 0;
        for (int64_t j = 0; j < len; ++j) {
          acc = arith::add(acc, convert<Acc>(p[j * s]));
          q[j * out_stride] = convert<Out>(acc);
        }
      });
    });
  });
  return out;
}

}  // namespace aotgrad::kernels
