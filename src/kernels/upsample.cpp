// Reading guide: `axis_weights` computes, once per output row (or column), the two source
// indices and their weights; the forward then mixes four pixels per output pixel, and the
// backward adds each output gradient into the same four input pixels. Both run in parallel over
// the N * C planes, which never share an element.
#include "kernels/upsample.h"

#include <algorithm>
#include <vector>

#include "kernels/arith.h"
#include "kernels/copy.h"
#include "kernels/data.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad::kernels {
namespace {

template <typename C>
struct AxisWeight {
  int64_t i0, i1;
  C w0, w1;
};

// ATen's area_pixel_compute_scale + area_pixel_compute_source_index, in the compute type C.
template <typename C>
std::vector<AxisWeight<C>> axis_weights(int64_t in, int64_t out, bool align_corners,
                                        std::optional<double> scale) {
  C ratio;
  if (align_corners)
    ratio = out > 1 ? static_cast<C>(in - 1) / static_cast<C>(out - 1) : C(0);
  else
    ratio = scale && *scale > 0 ? static_cast<C>(1.0 / *scale)
                                : static_cast<C>(in) / static_cast<C>(out);
  std::vector<AxisWeight<C>> w(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o) {
    C src = align_corners ? ratio * static_cast<C>(o)
                          : std::max(ratio * (static_cast<C>(o) + C(0.5)) - C(0.5), C(0));
    const int64_t i0 = static_cast<int64_t>(src);
    const C l1 = src - static_cast<C>(i0);
    w[o] = {i0, i0 + (i0 < in - 1 ? 1 : 0), C(1) - l1, l1};
  }
  return w;
}

}  // namespace

Tensor upsample_bilinear2d(const Tensor& self_in, const Upsample2dParams& p) {
  const Tensor self = self_in.is_contiguous() ? self_in : contiguous_copy(self_in, self_in.dtype());
  const IntList& s = self.sizes();
  const int64_t planes = s[0] * s[1], H = s[2], W = s[3], OH = p.out_h, OW = p.out_w;
  Tensor out = make_tensor({s[0], s[1], OH, OW}, self.dtype());
  if (out.numel() == 0) return out;
  visit_dtype(self.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_float(self.dtype(), [&](auto ctag) {
      using C = typename decltype(ctag)::type;
      const auto wh = axis_weights<C>(H, OH, p.align_corners, p.scale_h);
      const auto ww = axis_weights<C>(W, OW, p.align_corners, p.scale_w);
      const T* src = data_of<T>(self);
      T* dst = data_of<T>(out);
#pragma omp parallel for if (planes > 1 && out.numel() > 16384)
      for (int64_t pl = 0; pl < planes; ++pl) {
        const T* x = src + pl * H * W;
        T* y = dst + pl * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const AxisWeight<C>& h = wh[oh];
          const T *r0 = x + h.i0 * W, *r1 = x + h.i1 * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const AxisWeight<C>& w = ww[ow];
            C v = h.w0 * (w.w0 * convert<C>(r0[w.i0]) + w.w1 * convert<C>(r0[w.i1])) +
                  h.w1 * (w.w0 * convert<C>(r1[w.i0]) + w.w1 * convert<C>(r1[w.i1]));
            y[oh * OW + ow] = convert<T>(v);
          }
        }
      }
    });
  });
  return out;
}

Tensor upsample_bilinear2d_backward(const Tensor& grad_in, const IntList& input_sizes,
                                    const Upsample2dParams& p) {
  const Tensor grad = grad_in.is_contiguous() ? grad_in : contiguous_copy(grad_in, grad_in.dtype());
  const int64_t planes = input_sizes[0] * input_sizes[1], H = input_sizes[2], W = input_sizes[3];
  const int64_t OH = p.out_h, OW = p.out_w;
  Tensor out = make_tensor(input_sizes, grad.dtype());
  if (out.numel() == 0) return out;
  visit_dtype(grad.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_float(grad.dtype(), [&](auto ctag) {
      using C = typename decltype(ctag)::type;
      const auto wh = axis_weights<C>(H, OH, p.align_corners, p.scale_h);
      const auto ww = axis_weights<C>(W, OW, p.align_corners, p.scale_w);
      const T* g = data_of<T>(grad);
      T* dst = data_of<T>(out);
#pragma omp parallel for if (planes > 1 && grad.numel() > 16384)
      for (int64_t pl = 0; pl < planes; ++pl) {
        // Accumulate in C, then round once (ATen accumulates f16/bf16 in float too).
        std::vector<C> acc(static_cast<size_t>(H * W), C(0));
        const T* gy = g + pl * OH * OW;
        for (int64_t oh = 0; oh < OH; ++oh) {
          const AxisWeight<C>& h = wh[oh];
          C *r0 = acc.data() + h.i0 * W, *r1 = acc.data() + h.i1 * W;
          for (int64_t ow = 0; ow < OW; ++ow) {
            const AxisWeight<C>& w = ww[ow];
            const C v = convert<C>(gy[oh * OW + ow]);
            r0[w.i0] += h.w0 * w.w0 * v;
            r0[w.i1] += h.w0 * w.w1 * v;
            r1[w.i0] += h.w1 * w.w0 * v;
            r1[w.i1] += h.w1 * w.w1 * v;
          }
        }
        T* x = dst + pl * H * W;
        for (int64_t k = 0; k < H * W; ++k) x[k] = convert<T>(acc[k]);
      }
    });
  });
  return out;
}

}  // namespace aotgrad::kernels
