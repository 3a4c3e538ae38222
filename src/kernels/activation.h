// Eager CPU kernels of the piecewise and smooth activations real models use beyond relu and gelu:
// hardtanh, hardsigmoid, hardswish and silu, and their backward ops.
//
// Every function returns a fresh contiguous tensor; inputs may have any strides. The forward
// kernels keep self's dtype (hardtanh also takes integer tensors, as torch.clamp does; the others
// are floating only, checked by the rows' meta functions). Backward kernels return
// result_type(grad, self) in the broadcast shape. f16/bf16 compute in f32.
// Thread-safety: each call is independent.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val);
// grad where min_val < self < max_val, else 0 (a NaN self passes grad, as ATen's does).
Tensor hardtanh_backward(const Tensor& grad, const Tensor& self, const Scalar& min_val,
                         const Scalar& max_val);

Tensor hardsigmoid(const Tensor& self);                               // min(max(x + 3, 0), 6) / 6
Tensor hardsigmoid_backward(const Tensor& grad, const Tensor& self);  // grad / 6 on (-3, 3)
Tensor hardswish(const Tensor& self);                                 // x * hardsigmoid(x)
Tensor hardswish_backward(const Tensor& grad, const Tensor& self);
Tensor silu(const Tensor& self);  // x * sigmoid(x)
Tensor silu_backward(const Tensor& grad, const Tensor& self);

}  // namespace aotgrad::kernels
