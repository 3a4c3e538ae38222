// Neural-network kernels: softmax family, nll_loss, mse_loss.
//
// Reading guide: softmax and its backward work slice by slice along `dim`. make_slices() lists,
// per operand, the strides of every other dim (walked by NdCounter) and the step along `dim`;
// for_each_slice() hands each thread a range of slices. Contiguous operands with `dim` not last
// take the column-block path instead (ColumnBlocks), which reads memory sequentially. f32 slices
// with unit steps run the vector kernels of vec/rows.h. The losses walk the broadcast shape with
// NdCounter and accumulate in double; mse_loss on same-shape contiguous f32 operands runs the
// vector kernels instead, split over threads.
#include "kernels/nn.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/copy.h"
#include "kernels/data.h"
#include "kernels/parallel.h"
#include "kernels/vec/rows.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

template <typename T>
constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                          std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;
// f64 computes in double; f32 and the 16-bit storage types in float.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

[[noreturn]] void not_floating(const char* op, DType d) {
  throw std::invalid_argument(std::string(op) + ": expected a floating tensor, got " +
                              std::string(dtype_name(d)) + "; convert it with .to(f32)");
}

template <size_t N>
struct Slices {
  IntList sizes;                   // the shape without `dim`
  std::array<IntList, N> strides;  // each operand's strides without `dim`
  std::array<int64_t, N> step{};   // each operand's stride along `dim`
  int64_t len = 1;                 // the size of `dim`
};

// All operands have shape `sizes` (possibly with stride-0 dims).
template <size_t N>
Slices<N> make_slices(const IntList& sizes, int64_t dim, const std::array<const Tensor*, N>& ts) {
  Slices<N> s;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (static_cast<int64_t>(d) == dim)
      s.len = sizes[d];
    else
      s.sizes.push_back(sizes[d]);
  }
  for (size_t k = 0; k < N; ++k)
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (static_cast<int64_t>(d) == dim)
        s.step[k] = ts[k]->strides()[d];
      else
        s.strides[k].push_back(ts[k]->strides()[d]);
    }
  return s;
}

// Calls f(offsets) with each operand's element offset of the start of every slice.
template <size_t N, typename F>
void for_each_slice(const Slices<N>& s, F&& f) {
  const int64_t count = numel_of(s.sizes);
#pragma omp parallel if (count * s.len > kParallelWork)
  {
    int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
    int64_t begin = part_begin(count, tid, nt), end = part_begin(count, tid + 1, nt);
    if (begin < end) {
      std::array<const IntList*, N> strides;
      for (size_t k = 0; k < N; ++k) strides[k] = &s.strides[k];
      NdCounter<N> it(s.sizes, strides, std::array<int64_t, N>{});
      it.seek(begin);
      for (int64_t o = begin; o < end; ++o, it.next()) {
        std::array<int64_t, N> off;
        for (size_t k = 0; k < N; ++k) off[k] = it[k];
        f(off);
      }
    }
  }
}

// Contiguous operands with `dim` not the last one, seen as [outer, len, inner]: each slice is a
// column with step `inner`, so walking slices one by one touches a new cache line per element.
// Blocks of adjacent columns are processed together instead, row by row, reading sequentially.
struct ColumnBlocks {
  int64_t outer = 1, len = 1, inner = 1;
};
constexpr int64_t kColumns = 128;

template <size_t N>
std::optional<ColumnBlocks> column_blocks(const IntList& sizes, int64_t dim,
                                          const std::array<const Tensor*, N>& ts) {
  for (const Tensor* t : ts)
    if (!t->is_contiguous()) return std::nullopt;
  ColumnBlocks cb;
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t di = static_cast<int64_t>(d);
    if (di < dim)
      cb.outer *= sizes[d];
    else if (di == dim)
      cb.len = sizes[d];
    else
      cb.inner *= sizes[d];
  }
  if (cb.inner <= 1) return std::nullopt;
  return cb;
}

// Calls f(offset of the block's first element, number of columns) for every column block. A
// block spans about 16K elements (it is read two or three times, so it should stay in L2) and
// at least one cache line per row.
template <typename F>
void for_each_column_block(const ColumnBlocks& cb, F&& f) {
  const int64_t width =
      std::clamp<int64_t>(16384 / std::max<int64_t>(cb.len, 1) / 16 * 16, 16, kColumns);
  const int64_t per_outer = (cb.inner + width - 1) / width;
  const int64_t tasks = cb.outer * per_outer;
#pragma omp parallel for if (cb.outer * cb.len * cb.inner > kParallelWork)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t o = t / per_outer, i0 = (t % per_outer) * width;
    f(o * cb.len * cb.inner + i0, std::min(width, cb.inner - i0));
  }
}

template <typename T, typename O, typename C>
void softmax_columns(const T* x0, O* y0, const ColumnBlocks& cb, bool log) {
  const int64_t len = cb.len, inner = cb.inner;
  for_each_column_block(cb, [&](int64_t base, int64_t n) {
    const T* x = x0 + base;
    O* y = y0 + base;
    C mx[kColumns], scale[kColumns];
    double sum[kColumns];
    for (int64_t i = 0; i < n; ++i) {
      mx[i] = -std::numeric_limits<C>::infinity();
      sum[i] = 0;
    }
    for (int64_t d = 0; d < len; ++d)
      for (int64_t i = 0; i < n; ++i) mx[i] = std::max(mx[i], convert<C>(x[d * inner + i]));
    for (int64_t d = 0; d < len; ++d)
      for (int64_t i = 0; i < n; ++i) {
        C e = std::exp(convert<C>(x[d * inner + i]) - mx[i]);
        sum[i] += e;
        if constexpr (std::is_same_v<O, C>)
          if (!log) y[d * inner + i] = e;
      }
    if (log) {
      for (int64_t i = 0; i < n; ++i) scale[i] = static_cast<C>(std::log(sum[i]));
      for (int64_t d = 0; d < len; ++d)
        for (int64_t i = 0; i < n; ++i)
          y[d * inner + i] = convert<O>((convert<C>(x[d * inner + i]) - mx[i]) - scale[i]);
      return;
    }
    for (int64_t i = 0; i < n; ++i) scale[i] = static_cast<C>(1.0 / sum[i]);
    for (int64_t d = 0; d < len; ++d)
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<O, C>)
          y[d * inner + i] *= scale[i];
        else
          y[d * inner + i] = convert<O>(std::exp(convert<C>(x[d * inner + i]) - mx[i]) * scale[i]);
      }
  });
}

template <typename G, typename O, typename C>
void softmax_backward_columns(const G* g0, const G* y0, O* r0, const ColumnBlocks& cb, bool log) {
  const int64_t len = cb.len, inner = cb.inner;
  for_each_column_block(cb, [&](int64_t base, int64_t n) {
    const G* g = g0 + base;
    const G* y = y0 + base;
    O* r = r0 + base;
    double acc[kColumns];
    for (int64_t i = 0; i < n; ++i) acc[i] = 0;
    for (int64_t d = 0; d < len; ++d)
      for (int64_t i = 0; i < n; ++i) {
        double gv = convert<double>(g[d * inner + i]);
        acc[i] += log ? gv : gv * convert<double>(y[d * inner + i]);
      }
    for (int64_t d = 0; d < len; ++d)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = d * inner + i;
        const C gv = convert<C>(g[k]), yv = convert<C>(y[k]), a = static_cast<C>(acc[i]);
        r[k] = convert<O>(log ? gv - std::exp(yv) * a : yv * (gv - a));
      }
  });
}

template <typename T, typename O>
void softmax_typed(const Tensor& a, const Tensor& out, int64_t dim, bool log) {
  using C =
      std::conditional_t<std::is_same_v<T, double> || std::is_same_v<O, double>, double, float>;
  const T* x0 = data_of<const T>(a);
  O* y0 = data_of<O>(out);
  if (auto cb = column_blocks<2>(a.sizes(), dim, {&a, &out}))
    return softmax_columns<T, O, C>(x0, y0, *cb, log);
  Slices<2> s = make_slices<2>(a.sizes(), dim, {&a, &out});
  const int64_t len = s.len, sx = s.step[0], sy = s.step[1];
  if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float>) {
    if (sx == 1 && sy == 1) {
      const auto kernel = vec::row_kernels().softmax;
      return for_each_slice(s, [&](const std::array<int64_t, 2>& off) {
        kernel(x0 + off[0], y0 + off[1], len, log);
      });
    }
  }
  for_each_slice(s, [&](const std::array<int64_t, 2>& off) {
    const T* x = x0 + off[0];
    O* y = y0 + off[1];
    // Subtracting the max keeps exp() <= 1: no overflow however large the logits.
    C mx = -std::numeric_limits<C>::infinity();
    for (int64_t i = 0; i < len; ++i) mx = std::max(mx, convert<C>(x[i * sx]));
    double sum = 0;
    if (log) {
      for (int64_t i = 0; i < len; ++i) sum += std::exp(convert<C>(x[i * sx]) - mx);
      const C log_sum = static_cast<C>(std::log(sum));
      for (int64_t i = 0; i < len; ++i)
        y[i * sy] = convert<O>((convert<C>(x[i * sx]) - mx) - log_sum);
    } else if constexpr (std::is_same_v<O, C>) {
      // Keep exp() in the output and rescale: one exp per element instead of two.
      for (int64_t i = 0; i < len; ++i) {
        C e = std::exp(convert<C>(x[i * sx]) - mx);
        y[i * sy] = e;
        sum += e;
      }
      const C inv = static_cast<C>(1.0 / sum);
      for (int64_t i = 0; i < len; ++i) y[i * sy] *= inv;
    } else {
      for (int64_t i = 0; i < len; ++i) sum += std::exp(convert<C>(x[i * sx]) - mx);
      const C inv = static_cast<C>(1.0 / sum);
      for (int64_t i = 0; i < len; ++i)
        y[i * sy] = convert<O>(std::exp(convert<C>(x[i * sx]) - mx) * inv);
    }
  });
}

template <typename G, typename O>
void softmax_backward_typed(const Tensor& grad, const Tensor& output, const Tensor& gi, int64_t dim,
                            bool log) {
  using C =
      std::conditional_t<std::is_same_v<G, double> || std::is_same_v<O, double>, double, float>;
  const G* g0 = data_of<const G>(grad);
  const G* y0 = data_of<const G>(output);
  O* r0 = data_of<O>(gi);
  if (auto cb = column_blocks<3>(grad.sizes(), dim, {&grad, &output, &gi}))
    return softmax_backward_columns<G, O, C>(g0, y0, r0, *cb, log);
  Slices<3> s = make_slices<3>(grad.sizes(), dim, {&grad, &output, &gi});
  const int64_t len = s.len, sg = s.step[0], sy = s.step[1], sr = s.step[2];
  if constexpr (std::is_same_v<G, float> && std::is_same_v<O, float>) {
    if (sg == 1 && sy == 1 && sr == 1) {
      const auto kernel = vec::row_kernels().softmax_backward;
      return for_each_slice(s, [&](const std::array<int64_t, 3>& off) {
        kernel(g0 + off[0], y0 + off[1], r0 + off[2], len, log);
      });
    }
  }
  for_each_slice(s, [&](const std::array<int64_t, 3>& off) {
    const G* g = g0 + off[0];
    const G* y = y0 + off[1];
    O* r = r0 + off[2];
    double acc = 0;
    if (log) {
      for (int64_t i = 0; i < len; ++i) acc += convert<double>(g[i * sg]);
      const C sum = static_cast<C>(acc);
      for (int64_t i = 0; i < len; ++i)
        r[i * sr] = convert<O>(convert<C>(g[i * sg]) - std::exp(convert<C>(y[i * sy])) * sum);
    } else {
      for (int64_t i = 0; i < len; ++i)
        acc += convert<double>(g[i * sg]) * convert<double>(y[i * sy]);
      const C dot = static_cast<C>(acc);
      for (int64_t i = 0; i < len; ++i)
        r[i * sr] = convert<O>(convert<C>(y[i * sy]) * (convert<C>(g[i * sg]) - dot));
    }
  });
}

// Visits two floating dtypes (input, output); anything else is an error naming `op`.
template <typename F>
void visit_float_pair(const char* op, DType in, DType out, F&& f) {
  visit_dtype(in, [&](auto in_tag) {
    using T = typename decltype(in_tag)::type;
    if constexpr (!kIsFloat<T>) {
      not_floating(op, in);
    } else {
      visit_dtype(out, [&](auto out_tag) {
        using O = typename decltype(out_tag)::type;
        if constexpr (!kIsFloat<O>)
          not_floating(op, out);
        else
          f(T{}, O{});
      });
    }
  });
}

// The (offset, class) of each sample of nll_loss: self [N, C] or [C].
struct NllLayout {
  int64_t n, classes, s_row, s_col, s_target, s_weight;
};

NllLayout nll_layout(const Tensor& self, const Tensor& target, const Tensor& weight) {
  const bool batched = self.dim() == 2;
  return {batched ? self.size(0) : 1,
          self.size(-1),
          batched ? self.stride(0) : 0,
          self.stride(-1),
          target.dim() == 1 ? target.stride(0) : 0,
          weight.defined() ? weight.stride(0) : 0};
}

int64_t checked_class(const NllLayout& l, const int64_t* target, int64_t i, int64_t ignore_index) {
  int64_t c = target[i * l.s_target];
  if (c != ignore_index && (c < 0 || c >= l.classes))
    throw std::out_of_range("nll_loss: target value " + std::to_string(c) + " (sample " +
                            std::to_string(i) + ") is out of bounds for " +
                            std::to_string(l.classes) + " classes; targets must lie in [0, " +
                            std::to_string(l.classes) + ") or equal ignore_index (" +
                            std::to_string(ignore_index) + ")");
  return c;
}

}  // namespace

Tensor softmax(const Tensor& a, int64_t dim, bool log, DType out_dtype) {
  Tensor out = make_tensor(a.sizes(), out_dtype);
  if (out.numel() == 0) return out;
  visit_float_pair(log ? "_log_softmax" : "_softmax", a.dtype(), out_dtype, [&](auto t, auto o) {
    softmax_typed<decltype(t), decltype(o)>(a, out, dim, log);
  });
  return out;
}

Tensor softmax_backward(const Tensor& grad, const Tensor& output, int64_t dim, bool log,
                        DType out_dtype) {
  Tensor gi = make_tensor(grad.sizes(), out_dtype);
  if (gi.numel() == 0) return gi;
  const char* op = log ? "_log_softmax_backward_data" : "_softmax_backward_data";
  visit_float_pair(op, grad.dtype(), out_dtype, [&](auto g, auto o) {
    softmax_backward_typed<decltype(g), decltype(o)>(grad, output, gi, dim, log);
  });
  return gi;
}

std::pair<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                           const Tensor& weight, int64_t reduction,
                                           int64_t ignore_index) {
  const NllLayout l = nll_layout(self, target, weight);
  Tensor out = make_tensor(reduction == kReductionNone ? target.sizes() : IntList{}, self.dtype());
  Tensor total_weight = make_tensor({}, self.dtype());
  const int64_t* t = data_of<const int64_t>(target);
  visit_float_pair("nll_loss", self.dtype(), self.dtype(), [&](auto tag, auto) {
    using T = decltype(tag);
    const T* x = data_of<const T>(self);
    const T* w = weight.defined() ? data_of<const T>(weight) : nullptr;
    T* o = data_of<T>(out);
    double total = 0, acc = 0;
    for (int64_t i = 0; i < l.n; ++i) {
      int64_t c = checked_class(l, t, i, ignore_index);
      if (c == ignore_index) {
        if (reduction == kReductionNone) o[i] = convert<T>(0.0);
        continue;
      }
      double wc = w ? convert<double>(w[c * l.s_weight]) : 1.0;
      double v = -wc * convert<double>(x[i * l.s_row + c * l.s_col]);
      if (reduction == kReductionNone) o[i] = convert<T>(v);
      acc += v;
      total += wc;
    }
    // mean over zero total weight (every target ignored) is 0/0 = NaN, as in torch.
    if (reduction == kReductionMean) o[0] = convert<T>(acc / total);
    if (reduction == kReductionSum) o[0] = convert<T>(acc);
    *data_of<T>(total_weight) = convert<T>(total);
  });
  return {out, total_weight};
}

Tensor nll_loss_backward(const Tensor& grad, const Tensor& self, const Tensor& target,
                         const Tensor& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight) {
  const NllLayout l = nll_layout(self, target, weight);
  Tensor gi = make_tensor(self.sizes(), self.dtype());
  fill(gi, 0);
  const int64_t* t = data_of<const int64_t>(target);
  const int64_t s_grad = reduction == kReductionNone && grad.dim() == 1 ? grad.stride(0) : 0;
  const double scale = reduction == kReductionMean ? 1.0 / total_weight.item<double>() : 1.0;
  visit_float_pair("nll_loss_backward", self.dtype(), grad.dtype(), [&](auto tag, auto gtag) {
    using T = decltype(tag);
    using G = decltype(gtag);
    const G* g = data_of<const G>(grad);
    const T* w = weight.defined() ? data_of<const T>(weight) : nullptr;
    T* r = data_of<T>(gi);
    for (int64_t i = 0; i < l.n; ++i) {
      int64_t c = checked_class(l, t, i, ignore_index);
      if (c == ignore_index) continue;
      double wc = w ? convert<double>(w[c * l.s_weight]) : 1.0;
      r[i * l.classes + c] = convert<T>(-wc * convert<double>(g[i * s_grad]) * scale);
    }
  });
  return gi;
}

namespace {

// mse_loss's reduction over contiguous f32 operands of one shape: per-thread partial sums of the
// vector kernel, merged in thread order (deterministic for a given thread count).
double squared_distance(const float* x, const float* y, int64_t n) {
  const int threads = n > kParallelWork ? omp_get_max_threads() : 1;
  std::vector<double> partial(static_cast<size_t>(threads), 0.0);
  const auto kernel = vec::row_kernels().squared_distance;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    const int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
    const int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
    partial[static_cast<size_t>(tid)] = kernel(x + begin, y + begin, end - begin);
  }
  double total = 0;
  for (double p : partial) total += p;
  return total;
}

bool dense_f32(const Tensor& t, const IntList& shape) {
  return t.dtype() == DType::f32 && t.is_contiguous() && t.sizes() == shape;
}

}  // namespace

Tensor mse_loss(const Tensor& a, const Tensor& b, int64_t reduction, DType dtype) {
  const IntList shape = broadcast_shapes(a.sizes(), b.sizes());
  if (dtype == DType::f32 && reduction != kReductionNone && dense_f32(a, shape) &&
      dense_f32(b, shape)) {
    const int64_t n = numel_of(shape);
    const double total = squared_distance(data_of<const float>(a), data_of<const float>(b), n);
    Tensor out = make_tensor({}, dtype);
    *data_of<float>(out) =
        static_cast<float>(reduction == kReductionMean ? total / static_cast<double>(n) : total);
    return out;
  }
  const Tensor ac = a.dtype() == dtype ? a : contiguous_copy(a, dtype);
  const Tensor bc = b.dtype() == dtype ? b : contiguous_copy(b, dtype);
  const IntList sa = broadcast_strides(ac, shape), sb = broadcast_strides(bc, shape);
  const int64_t n = numel_of(shape);
  Tensor out = make_tensor(reduction == kReductionNone ? shape : IntList{}, dtype);
  visit_float_pair("mse_loss", dtype, dtype, [&](auto tag, auto) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* x = data_of<const T>(ac);
    const T* y = data_of<const T>(bc);
    T* o = data_of<T>(out);
    const int threads = n > kParallelWork ? omp_get_max_threads() : 1;
    std::vector<double> partial(static_cast<size_t>(threads), 0.0);
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
      int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
      int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
      if (begin < end) {
        NdCounter<2> it(shape, {&sa, &sb}, {0, 0});
        it.seek(begin);
        double acc = 0;
        for (int64_t k = begin; k < end; ++k, it.next()) {
          C d = convert<C>(x[it[0]]) - convert<C>(y[it[1]]);
          if (reduction == kReductionNone)
            o[k] = convert<T>(d * d);
          else
            acc += static_cast<double>(d) * static_cast<double>(d);
        }
        partial[static_cast<size_t>(tid)] = acc;
      }
    }
    double total = 0;
    for (double p : partial) total += p;
    if (reduction == kReductionMean) o[0] = convert<T>(total / static_cast<double>(n));
    if (reduction == kReductionSum) o[0] = convert<T>(total);
  });
  return out;
}

Tensor mse_loss_backward(const Tensor& grad, const Tensor& a, const Tensor& b, int64_t reduction,
                         DType dtype) {
  const IntList shape = broadcast_shapes(a.sizes(), b.sizes());
  const Tensor ac = a.dtype() == dtype ? a : contiguous_copy(a, dtype);
  const Tensor bc = b.dtype() == dtype ? b : contiguous_copy(b, dtype);
  const Tensor gc = grad.dtype() == dtype ? grad : contiguous_copy(grad, dtype);
  const IntList sa = broadcast_strides(ac, shape), sb = broadcast_strides(bc, shape);
  const IntList sg = broadcast_strides(gc, shape);  // a 0-dim grad (mean / sum) reads stride 0
  const int64_t n = numel_of(shape);
  const double scale = reduction == kReductionMean ? 2.0 / static_cast<double>(n) : 2.0;
  Tensor out = make_tensor(shape, dtype);
  if (dtype == DType::f32 && dense_f32(a, shape) && dense_f32(b, shape) &&
      grad.dtype() == DType::f32 && (grad.numel() == 1 || dense_f32(grad, shape))) {
    const float* x = data_of<const float>(a);
    const float* y = data_of<const float>(b);
    const float* g = data_of<const float>(grad);
    const int64_t g_stride = grad.numel() == 1 && n > 1 ? 0 : 1;
    float* o = data_of<float>(out);
    const auto kernel = vec::row_kernels().scaled_difference;
#pragma omp parallel if (n > kParallelWork)
    {
      const int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
      const int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
      kernel(x + begin, y + begin, g + begin * g_stride, g_stride, static_cast<float>(scale),
             o + begin, end - begin);
    }
    return out;
  }
  visit_float_pair("mse_loss_backward", dtype, dtype, [&](auto tag, auto) {
    using T = decltype(tag);
    using C = Compute<T>;
    const T* x = data_of<const T>(ac);
    const T* y = data_of<const T>(bc);
    const T* g = data_of<const T>(gc);
    T* o = data_of<T>(out);
#pragma omp parallel if (n > kParallelWork)
    {
      int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
      int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
      if (begin < end) {
        NdCounter<3> it(shape, {&sa, &sb, &sg}, {0, 0, 0});
        it.seek(begin);
        for (int64_t k = begin; k < end; ++k, it.next()) {
          C d = convert<C>(x[it[0]]) - convert<C>(y[it[1]]);
          o[k] = convert<T>(static_cast<C>(scale) * d * convert<C>(g[it[2]]));
        }
      }
    }
  });
  return out;
}

}  // namespace aotgrad::kernels
