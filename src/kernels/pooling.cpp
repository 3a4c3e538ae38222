// Pooling kernels: one plane of H x W per (n, c), planes split across OpenMP threads.
#include "kernels/pooling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/copy.h"
#include "kernels/parallel.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelWork = 32768;

struct Planes {
  int64_t count, H, W;
};

Planes planes(const Tensor& t) {
  const int64_t d = t.dim();
  return {d == 3 ? t.size(0) : t.size(0) * t.size(1), t.size(d - 2), t.size(d - 1)};
}

DType compute_dtype(DType t) {
  return t == DType::f64 ? DType::f64 : DType::f32;
}

Tensor dense(const Tensor& t, DType dtype) {
  if (t.is_contiguous() && t.dtype() == dtype) return t;
  return contiguous_copy(t, dtype);
}

Tensor as_dtype(const Tensor& t, DType dtype) {
  return t.dtype() == dtype ? t : contiguous_copy(t, dtype);
}

IntList with_last_two(const IntList& sizes, int64_t h, int64_t w) {
  IntList r = sizes;
  r[r.size() - 2] = h;
  r[r.size() - 1] = w;
  return r;
}

template <typename T>
void max_pool_planes(const Planes& pl, const Pool2dParams& p, int64_t oH, int64_t oW, const T* in,
                     T* out, int64_t* ind) {
  // Plain locals, not structured bindings: clang before 16 cannot use those inside an OpenMP
  // region, and the fuzz preset builds with clang.
  const int64_t kH = p.kernel[0], kW = p.kernel[1];
  const int64_t sH = p.stride[0], sW = p.stride[1];
  const int64_t pH = p.padding[0], pW = p.padding[1];
  const int64_t dH = p.dilation[0], dW = p.dilation[1];
#pragma omp parallel for if (pl.count * oH * oW * kH * kW > kParallelWork)
  for (int64_t c = 0; c < pl.count; ++c) {
    const T* ip = in + c * pl.H * pl.W;
    for (int64_t oh = 0; oh < oH; ++oh) {
      int64_t h0 = oh * sH - pH;
      const int64_t h1 = std::min(h0 + (kH - 1) * dH + 1, pl.H);
      while (h0 < 0) h0 += dH;
      for (int64_t ow = 0; ow < oW; ++ow) {
        int64_t w0 = ow * sW - pW;
        const int64_t w1 = std::min(w0 + (kW - 1) * dW + 1, pl.W);
        while (w0 < 0) w0 += dW;
        // As ATen: start from the window's first valid position, and let NaN win.
        int64_t best = h0 * pl.W + w0;
        T best_val = -std::numeric_limits<T>::infinity();
        for (int64_t h = h0; h < h1; h += dH)
          for (int64_t w = w0; w < w1; w += dW) {
            const T v = ip[h * pl.W + w];
            if (v > best_val || std::isnan(v)) {
              best_val = v;
              best = h * pl.W + w;
            }
          }
        const int64_t o = (c * oH + oh) * oW + ow;
        out[o] = best_val;
        ind[o] = best;
      }
    }
  }
}

template <typename T>
void adaptive_avg_planes(const Planes& pl, int64_t oH, int64_t oW, const T* in, T* out) {
#pragma omp parallel for if (pl.count * pl.H * pl.W > kParallelWork)
  for (int64_t c = 0; c < pl.count; ++c) {
    const T* ip = in + c * pl.H * pl.W;
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t h0 = oh * pl.H / oH, h1 = ((oh + 1) * pl.H + oH - 1) / oH;
      for (int64_t ow = 0; ow < oW; ++ow) {
        const int64_t w0 = ow * pl.W / oW, w1 = ((ow + 1) * pl.W + oW - 1) / oW;
        T sum = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) sum += ip[h * pl.W + w];
        out[(c * oH + oh) * oW + ow] = sum / static_cast<T>((h1 - h0) * (w1 - w0));
      }
    }
  }
}

template <typename T>
void adaptive_avg_backward_planes(const Planes& pl, int64_t oH, int64_t oW, const T* go, T* gi) {
#pragma omp parallel for if (pl.count * pl.H * pl.W > kParallelWork)
  for (int64_t c = 0; c < pl.count; ++c) {
    T* ip = gi + c * pl.H * pl.W;
    std::fill(ip, ip + pl.H * pl.W, T(0));
    for (int64_t oh = 0; oh < oH; ++oh) {
      const int64_t h0 = oh * pl.H / oH, h1 = ((oh + 1) * pl.H + oH - 1) / oH;
      for (int64_t ow = 0; ow < oW; ++ow) {
        const int64_t w0 = ow * pl.W / oW, w1 = ((ow + 1) * pl.W + oW - 1) / oW;
        const T g = go[(c * oH + oh) * oW + ow] / static_cast<T>((h1 - h0) * (w1 - w0));
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) ip[h * pl.W + w] += g;
      }
    }
  }
}

// One avg_pool2d window: the input rows/cols it covers and what its sum is divided by.
struct AvgWindow {
  int64_t h0, h1, w0, w1;
  int64_t divisor;
};

AvgWindow avg_window(const AvgPool2dParams& p, int64_t H, int64_t W, int64_t oh, int64_t ow) {
  const Pool2dParams& q = p.window;
  int64_t h0 = oh * q.stride[0] - q.padding[0], w0 = ow * q.stride[1] - q.padding[1];
  int64_t h1 = std::min(h0 + q.kernel[0], H + q.padding[0]);
  int64_t w1 = std::min(w0 + q.kernel[1], W + q.padding[1]);
  const int64_t padded_size = (h1 - h0) * (w1 - w0);
  h0 = std::max<int64_t>(h0, 0);
  w0 = std::max<int64_t>(w0, 0);
  h1 = std::min(h1, H);
  w1 = std::min(w1, W);
  int64_t divisor = p.divisor_override != 0 ? p.divisor_override
                    : p.count_include_pad   ? padded_size
                                            : (h1 - h0) * (w1 - w0);
  return {h0, h1, w0, w1, divisor};
}

template <typename T>
void avg_pool_planes(const Planes& pl, const AvgPool2dParams& p, int64_t oH, int64_t oW,
                     const T* in, T* out) {
  const int64_t windows = oH * oW;
#pragma omp parallel for if (pl.count * windows * p.window.kernel[0] * p.window.kernel[1] > \
                             kParallelWork)
  for (int64_t c = 0; c < pl.count; ++c) {
    const T* ip = in + c * pl.H * pl.W;
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) {
        const AvgWindow w = avg_window(p, pl.H, pl.W, oh, ow);
        T sum = 0;
        for (int64_t h = w.h0; h < w.h1; ++h)
          for (int64_t x = w.w0; x < w.w1; ++x) sum += ip[h * pl.W + x];
        const bool empty = w.h0 >= w.h1 || w.w0 >= w.w1;
        out[c * windows + oh * oW + ow] = empty ? T(0) : sum / static_cast<T>(w.divisor);
      }
  }
}

template <typename T>
void avg_pool_backward_planes(const Planes& pl, const AvgPool2dParams& p, int64_t oH, int64_t oW,
                              const T* go, T* gi) {
  const int64_t windows = oH * oW;
#pragma omp parallel for if (pl.count * pl.H * pl.W > kParallelWork)
  for (int64_t c = 0; c < pl.count; ++c) {
    T* ip = gi + c * pl.H * pl.W;
    std::fill(ip, ip + pl.H * pl.W, T(0));
    for (int64_t oh = 0; oh < oH; ++oh)
      for (int64_t ow = 0; ow < oW; ++ow) {
        const AvgWindow w = avg_window(p, pl.H, pl.W, oh, ow);
        if (w.h0 >= w.h1 || w.w0 >= w.w1) continue;
        const T g = go[c * windows + oh * oW + ow] / static_cast<T>(w.divisor);
        for (int64_t h = w.h0; h < w.h1; ++h)
          for (int64_t x = w.w0; x < w.w1; ++x) ip[h * pl.W + x] += g;
      }
  }
}

// Runs `f(tag)` for the compute type of `dtype` (float or double).
template <typename F>
void visit_compute(DType dtype, F&& f) {
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) f(tag);
  });
}

}  // namespace

int64_t pool_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil,
                         bool ceil_mode) {
  // In 128 bits, where no term can wrap: a huge kernel, dilation or stride is a user's choice.
  using Wide = __int128;
  const Wide span = Wide{in} + Wide{2} * pad - Wide{dil} * (kernel - 1) - 1 +
                    (ceil_mode ? Wide{stride} - 1 : Wide{0});
  // Floor division rounding towards -inf, as ATen's div_rtn.
  Wide out = (span >= 0 ? span / stride : -((-span + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= Wide{in} + pad) --out;
  // Past int64 only for absurd paddings; the caller's shape check then names the op.
  return static_cast<int64_t>(std::clamp<Wide>(out, std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max()));
}

std::pair<Tensor, Tensor> max_pool2d_with_indices(const Tensor& input, const Pool2dParams& p) {
  const Planes pl = planes(input);
  const int64_t oH =
      pool_output_size(pl.H, p.kernel[0], p.stride[0], p.padding[0], p.dilation[0], p.ceil_mode);
  const int64_t oW =
      pool_output_size(pl.W, p.kernel[1], p.stride[1], p.padding[1], p.dilation[1], p.ceil_mode);
  const DType compute = compute_dtype(input.dtype());
  Tensor x = dense(input, compute);
  const IntList out_sizes = with_last_two(input.sizes(), oH, oW);
  Tensor out = make_tensor(out_sizes, compute), ind = make_tensor(out_sizes, DType::i64);
  visit_compute(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    max_pool_planes<T>(pl, p, oH, oW, x.data_ptr<T>(), out.data_ptr<T>(), ind.data_ptr<int64_t>());
  });
  return {as_dtype(out, input.dtype()), ind};
}

Tensor max_pool2d_with_indices_backward(const Tensor& grad_output, const Tensor& input,
                                        const Tensor& indices) {
  const Planes pl = planes(input);
  const int64_t outputs = pl.count == 0 ? 0 : grad_output.numel() / pl.count;
  const DType compute = compute_dtype(input.dtype());
  Tensor g = dense(grad_output, compute), ind = dense(indices, DType::i64);
  Tensor gi = make_tensor(input.sizes(), compute);
  visit_compute(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* gp = g.data_ptr<T>();
    const int64_t* ip = ind.data_ptr<int64_t>();
    T* out = gi.data_ptr<T>();
    const int64_t plane = pl.H * pl.W;
    int64_t bad = -1;  // an index outside the plane; reported after the parallel region
#pragma omp parallel for if (pl.count * (plane + outputs) > kParallelWork)
    for (int64_t c = 0; c < pl.count; ++c) {
      T* op = out + c * plane;
      std::fill(op, op + plane, T(0));
      for (int64_t o = c * outputs; o < (c + 1) * outputs; ++o) {
        const int64_t i = ip[o];
        if (i < 0 || i >= plane) {
#pragma omp atomic write
          bad = o;
          continue;
        }
        op[i] += gp[o];
      }
    }
    if (bad >= 0)
      throw std::out_of_range("max_pool2d_with_indices_backward: index " + std::to_string(ip[bad]) +
                              " is outside the input plane of " + std::to_string(plane) +
                              " elements; pass the indices max_pool2d_with_indices returned");
  });
  return as_dtype(gi, input.dtype());
}

Tensor adaptive_avg_pool2d(const Tensor& input, int64_t out_h, int64_t out_w) {
  const Planes pl = planes(input);
  const DType compute = compute_dtype(input.dtype());
  Tensor x = dense(input, compute);
  Tensor out = make_tensor(with_last_two(input.sizes(), out_h, out_w), compute);
  visit_compute(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    adaptive_avg_planes<T>(pl, out_h, out_w, x.data_ptr<T>(), out.data_ptr<T>());
  });
  return as_dtype(out, input.dtype());
}

Tensor adaptive_avg_pool2d_backward(const Tensor& grad_output, const Tensor& input) {
  const Planes pl = planes(input);
  const int64_t d = grad_output.dim();
  const int64_t oH = grad_output.size(d - 2), oW = grad_output.size(d - 1);
  const DType compute = compute_dtype(input.dtype());
  Tensor g = dense(grad_output, compute);
  Tensor gi = make_tensor(input.sizes(), compute);
  visit_compute(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    adaptive_avg_backward_planes<T>(pl, oH, oW, g.data_ptr<T>(), gi.data_ptr<T>());
  });
  return as_dtype(gi, input.dtype());
}

Tensor avg_pool2d(const Tensor& input, const AvgPool2dParams& p) {
  const Planes pl = planes(input);
  const Pool2dParams& q = p.window;
  const int64_t oH = pool_output_size(pl.H, q.kernel[0], q.stride[0], q.padding[0], 1, q.ceil_mode);
  const int64_t oW = pool_output_size(pl.W, q.kernel[1], q.stride[1], q.padding[1], 1, q.ceil_mode);
  const DType compute = compute_dtype(input.dtype());
  Tensor x = dense(input, compute);
  Tensor out = make_tensor(with_last_two(input.sizes(), oH, oW), compute);
  visit_compute(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_planes<T>(pl, p, oH, oW, x.data_ptr<T>(), out.data_ptr<T>());
  });
  return as_dtype(out, input.dtype());
}

Tensor avg_pool2d_backward(const Tensor& grad_output, const Tensor& input,
                           const AvgPool2dParams& p) {
  const Planes pl = planes(input);
  const int64_t d = grad_output.dim();
  const int64_t oH = grad_output.size(d - 2), oW = grad_output.size(d - 1);
  const DType compute = compute_dtype(input.dtype());
  Tensor g = dense(grad_output, compute);
  Tensor gi = make_tensor(input.sizes(), compute);
  visit_compute(compute, [&](auto tag) {
    using T = typename decltype(tag)::type;
    avg_pool_backward_planes<T>(pl, p, oH, oW, g.data_ptr<T>(), gi.data_ptr<T>());
  });
  return as_dtype(gi, input.dtype());
}

}  // namespace aotgrad::kernels
