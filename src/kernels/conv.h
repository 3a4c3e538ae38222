// 2-D convolution (forward, and the gradients with respect to input, weight and bias).
//
// f32 runs cached oneDNN primitives. Forward and backward-data work on our plain NCHW / OIHW
// memory (on this machine oneDNN's im2col + JIT GEMM there beats its blocked kernels once the
// reorders to and from the blocked layout are paid on every call); backward-weights lets oneDNN
// choose blocked layouts and reorders, as its plain-layout GEMM path is ~2.5x slower. f64, and
// any case where oneDNN offers only its reference implementation, run a direct OpenMP loop nest.
// f16 / bf16 compute in f32. Inputs may have any strides (non-contiguous ones are copied first);
// results are contiguous. Shapes are validated by the op layer's meta functions.
#pragma once

#include <array>
#include <string>

#include "aotgrad/tensor.h"
#include "kernels/gemm.h"

namespace aotgrad::kernels {

struct Conv2dParams {
  std::array<int64_t, 2> stride{1, 1};
  std::array<int64_t, 2> padding{0, 0};
  std::array<int64_t, 2> dilation{1, 1};
  int64_t groups = 1;
};

// Output extent along one spatial dim: floor((in + 2 pad - dil (k - 1) - 1) / stride) + 1.
int64_t conv_output_size(int64_t in, int64_t kernel, int64_t stride, int64_t pad, int64_t dil);

// input [N, C, H, W], weight [O, C / groups, kH, kW], bias [O] or undefined -> [N, O, oH, oW].
Tensor conv2d(const Tensor& input, const Tensor& weight, const Tensor& bias, const Conv2dParams& p);

// conv2d with its epilogue as oneDNN post-ops (the cpp backend's fused steps): `e.bias` is the
// convolution's bias [O] (or undefined), then e.activation and e.residual (f32, the result's
// sizes, contiguous) in e's order. f32 only, into a fresh contiguous [N, O, oH, oW]. Returns an
// undefined tensor when oneDNN cannot run it fused (another dtype, a problem the loop nest
// serves, a residual of another layout, only oneDNN's reference implementation): the caller runs
// the ops unfused.
Tensor conv2d_epilogue(const Tensor& input, const Tensor& weight, const Conv2dParams& p,
                       const GemmEpilogue& e);

// {grad_input, grad_weight, grad_bias} of conv2d; entry i is undefined unless need[i].
std::array<Tensor, 3> conv2d_backward(const Tensor& grad_output, const Tensor& input,
                                      const Tensor& weight, const Conv2dParams& p,
                                      std::array<bool, 3> need);

// The loop-nest paths, exposed so tests can compare them with oneDNN in f32.
Tensor conv2d_loop(const Tensor& input, const Tensor& weight, const Tensor& bias,
                   const Conv2dParams& p);
std::array<Tensor, 3> conv2d_backward_loop(const Tensor& grad_output, const Tensor& input,
                                           const Tensor& weight, const Conv2dParams& p,
                                           std::array<bool, 3> need);
// Which implementation conv2d(input, weight, ...) runs: "onednn:<impl name>" or "loop".
std::string conv2d_backend(const Tensor& input, const Tensor& weight, const Conv2dParams& p);

}  // namespace aotgrad::kernels
