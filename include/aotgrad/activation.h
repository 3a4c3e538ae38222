// Activations beyond relu/gelu/sigmoid/tanh (those are in ops.h), as torch.nn.functional names
// them, and the in-place forms models use. Every function is differentiable (the backward ops are
// themselves differentiable) and records one ATen-named node under tracing.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad {

// clamp(self, min_val, max_val); keeps self's dtype (integer tensors too, not bool).
Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor hardsigmoid(const Tensor& self);  // relu6(x + 3) / 6, floating self
Tensor hardswish(const Tensor& self);    // x * relu6(x + 3) / 6, floating self
Tensor silu(const Tensor& self);         // x * sigmoid(x), floating self

// In place; each returns self. Like any in-place op: refused on a leaf that requires grad, and on
// a self with an expanded (stride-0) dim.
Tensor& relu_(Tensor& self);
Tensor& sigmoid_(Tensor& self);
Tensor& tanh_(Tensor& self);
Tensor& hardtanh_(Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor& hardsigmoid_(Tensor& self);
Tensor& hardswish_(Tensor& self);
Tensor& silu_(Tensor& self);

}  // namespace aotgrad
