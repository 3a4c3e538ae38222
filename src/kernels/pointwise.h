// Eager CPU kernels of the pointwise and comparison families.
//
// Every function returns a fresh contiguous tensor of the broadcast shape and of the dtype the op
// rows' meta functions promise (tensor/promotion.h: result_type, float_op_dtype). Inputs may have any
// strides (views, expanded stride-0 dims, offsets) and any dtype; they are converted to the compute
// dtype as they are read (f16/bf16 compute in f32). Shapes and dtypes are validated by the rows'
// meta functions; these kernels trust them.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// ---- binary arithmetic: result_type(a, b); div promotes integral results to the default float
// ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha);  // a + alpha * b
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha);  // a - alpha * b
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);

// ---- unary: neg and relu keep the dtype; the others return float_op_dtype(a) ----
// erf has a kernel but no op row yet; silu is aten.silu's kernel (kernels/activation.h).
enum class Unary : uint8_t { neg, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid, relu, erf, silu };
Tensor unary(Unary op, const Tensor& a);
Tensor gelu(const Tensor& a, bool tanh_approximation);
// result_type(a, exponent).
Tensor pow(const Tensor& a, const Scalar& exponent);

// ---- backward helpers of the activations (floating inputs) ----
Tensor tanh_backward(const Tensor& grad, const Tensor& output);     // grad * (1 - y^2)
Tensor sigmoid_backward(const Tensor& grad, const Tensor& output);  // grad * (1 - y) * y
Tensor threshold_backward(const Tensor& grad, const Tensor& self, const Scalar& threshold);
Tensor gelu_backward(const Tensor& grad, const Tensor& self, bool tanh_approximation);

// ---- comparison (b8 results, compared in result_type(a, b)) and selection ----
enum class Compare : uint8_t { eq, ne, gt, ge, lt, le };
Tensor compare(Compare op, const Tensor& a, const Tensor& b);
Tensor compare(Compare op, const Tensor& a, const Scalar& b);
// condition ? a : b, in result_type(a, b); condition is b8.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);

}  // namespace aotgrad::kernels
