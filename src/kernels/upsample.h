// Eager CPU kernels of bilinear upsampling over the last two dims of an [N, C, H, W] tensor, as
// ATen's upsample_bilinear2d computes it (UpSample.h: area_pixel_compute_scale and
// area_pixel_compute_source_index), and its backward.
//
// Each output pixel (oh, ow) reads the four input pixels around the source point
//   align_corners: src = dst * (in - 1) / (out - 1)          (0 when out == 1)
//   otherwise:     src = max((dst + 0.5) / scale - 0.5, 0)    with scale = the given scale factor,
//                                                             or out / in when none is given
// weighted by the distances to it; the backward scatters the gradient with the same weights.
// Arithmetic runs in float for f32/f16/bf16 and in double for f64, as ATen's opmath type.
#pragma once

#include <optional>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

struct Upsample2dParams {
  int64_t out_h = 0, out_w = 0;
  bool align_corners = false;
  std::optional<double> scale_h, scale_w;  // scale factors as given (output / input)
};

// A fresh contiguous [N, C, out_h, out_w] tensor of self's dtype; self is a floating
// [N, C, H, W] tensor with any strides.
Tensor upsample_bilinear2d(const Tensor& self, const Upsample2dParams& p);

// The gradient for the [N, C, H, W] input (`input_sizes`) from grad_output [N, C, out_h, out_w].
Tensor upsample_bilinear2d_backward(const Tensor& grad_output, const IntList& input_sizes,
                                    const Upsample2dParams& p);

}  // namespace aotgrad::kernels
