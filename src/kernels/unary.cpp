// Unary pointwise kernels: neg, the float math functions, activations, pow with a scalar exponent.
// Floating inputs run the runtime-dispatched vector kernels of kernels/vec (AVX-512, AVX2, SSE4 or
// portable; SLEEF's transcendentals); integral and bool ones a plain loop.
#include <cmath>
#include <stdexcept>

#include "kernels/arith.h"
#include "kernels/elementwise.h"
#include "kernels/pointwise.h"
#include "kernels/vec/vec.h"
#include "tensor/promotion.h"

namespace aotgrad::kernels {
namespace {

template <typename T, typename Op>
Tensor map(const Tensor& a, DType out_dtype, const Op& op) {
  Tensor out = make_tensor(a.sizes(), out_dtype);
  elementwise::run<T, T>(out, {a}, op);
  return out;
}

// f(a) in the floating dtype `dt` (f16/bf16 compute in f32) through the best vector kernel this
// CPU runs; p is the kernel's parameter (pow's exponent).
Tensor vec_map(const Tensor& a, DType dt, vec::UnaryFn fn, double p = 0) {
  Tensor out = make_tensor(a.sizes(), dt);
  visit_float(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    elementwise::run_vec<T>(out, a, vec::active().of<T>()[fn], static_cast<T>(p));
  });
  return out;
}

// exp, log, ...: integral inputs are read as the default float.
Tensor float_map(const Tensor& a, vec::UnaryFn fn) {
  return vec_map(a, float_op_dtype(a.dtype()), fn);
}

// neg and relu keep the dtype: floating ones vectorize, integral and bool ones run `op`.
template <typename Op>
Tensor same_dtype_map(const Tensor& a, vec::UnaryFn fn, const Op& op) {
  if (is_floating(a.dtype())) return vec_map(a, a.dtype(), fn);
  return visit_compute(a.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    return map<T>(a, a.dtype(), [&op](T x) -> T { return op(x); });
  });
}

vec::UnaryFn vec_fn(Unary op) {
  switch (op) {
    case Unary::neg:
      return vec::UnaryFn::neg;
    case Unary::exp:
      return vec::UnaryFn::exp;
    case Unary::log:
      return vec::UnaryFn::log;
    case Unary::sqrt:
      return vec::UnaryFn::sqrt;
    case Unary::rsqrt:
      return vec::UnaryFn::rsqrt;
    case Unary::sin:
      return vec::UnaryFn::sin;
    case Unary::cos:
      return vec::UnaryFn::cos;
    case Unary::tanh:
      return vec::UnaryFn::tanh;
    case Unary::sigmoid:
      return vec::UnaryFn::sigmoid;
    case Unary::relu:
      return vec::UnaryFn::relu;
    case Unary::erf:
      return vec::UnaryFn::erf;
    case Unary::silu:
      return vec::UnaryFn::silu;
  }
  throw std::logic_error("unary: unknown op");
}

}  // namespace

Tensor unary(Unary op, const Tensor& a) {
  if (op == Unary::neg)
    return same_dtype_map(a, vec::UnaryFn::neg, [](auto x) { return arith::neg(x); });
  // x < 0 rather than x > 0, so NaN passes through like ATen's clamp_min(x, 0).
  if (op == Unary::relu)
    return same_dtype_map(a, vec::UnaryFn::relu,
                          [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; });
  return float_map(a, vec_fn(op));
}

Tensor gelu(const Tensor& a, bool tanh_approximation) {
  return float_map(a, tanh_approximation ? vec::UnaryFn::gelu_tanh : vec::UnaryFn::gelu_erf);
}

// x^e; for floating results the exponents ATen special-cases (1, 2, 3, +-0.5, -1, -2) take the
// same exact forms in the vector kernel.
Tensor pow(const Tensor& a, const Scalar& exponent) {
  DType dt = result_type(a, exponent);
  if (is_floating(dt)) return vec_map(a, dt, vec::UnaryFn::pow, exponent.to_double());
  // Integral base and exponent (the ops layer refuses negative ones, as torch does).
  const int64_t e = exponent.to_int();
  return map<int64_t>(a, dt, [e](int64_t x) -> int64_t { return arith::ipow(x, e); });
}

}  // namespace aotgrad::kernels
