// Unary pointwise kernels: neg, the float math functions, activations, pow with a scalar exponent.
#include <cmath>
#include <stdexcept>

#include "kernels/arith.h"
#include "kernels/elementwise.h"
#include "kernels/pointwise.h"
#include "ops/promotion.h"

namespace aotgrad::kernels {
namespace {

template <typename T, typename Op>
Tensor map(const Tensor& a, DType out_dtype, const Op& op) {
  Tensor out = make_tensor(a.sizes(), out_dtype);
  elementwise::run<T, T>(out, {a}, op);
  return out;
}

// exp, log, ...: integral inputs are read as the default float. `op` is generic over T.
template <typename Op>
Tensor float_map(const Tensor& a, const Op& op) {
  DType dt = ops::float_op_dtype(a.dtype());
  return visit_float(dt, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return map<T>(a, dt, [&op](T x) -> T { return op(x); });
  });
}

// x^e for floating T; the common exponents take exact, faster forms, as ATen does.
template <typename T>
Tensor float_pow(const Tensor& a, DType dt, const Scalar& exponent) {
  const double e = exponent.to_double();
  if (e == 1) return map<T>(a, dt, [](T x) -> T { return x; });
  if (e == 2) return map<T>(a, dt, [](T x) -> T { return x * x; });
  if (e == 3) return map<T>(a, dt, [](T x) -> T { return x * x * x; });
  if (e == 0.5) return map<T>(a, dt, [](T x) -> T { return std::sqrt(x); });
  if (e == -0.5) return map<T>(a, dt, [](T x) -> T { return T(1) / std::sqrt(x); });
  if (e == -1) return map<T>(a, dt, [](T x) -> T { return T(1) / x; });
  if (e == -2) return map<T>(a, dt, [](T x) -> T { return T(1) / (x * x); });
  const T te = static_cast<T>(e);
  return map<T>(a, dt, [te](T x) -> T { return std::pow(x, te); });
}

}  // namespace

Tensor unary(Unary op, const Tensor& a) {
  switch (op) {
    case Unary::neg:
      return visit_compute(a.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        return map<T>(a, a.dtype(), [](T x) -> T { return arith::neg(x); });
      });
    case Unary::relu:
      // x < 0 rather than x > 0, so NaN passes through like ATen's clamp_min(x, 0).
      return visit_compute(a.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        return map<T>(a, a.dtype(), [](T x) -> T { return x < T(0) ? T(0) : x; });
      });
    case Unary::exp:
      return float_map(a, [](auto x) { return std::exp(x); });
    case Unary::log:
      return float_map(a, [](auto x) { return std::log(x); });
    case Unary::sqrt:
      return float_map(a, [](auto x) { return std::sqrt(x); });
    case Unary::rsqrt:
      return float_map(a, [](auto x) { return decltype(x)(1) / std::sqrt(x); });
    case Unary::sin:
      return float_map(a, [](auto x) { return std::sin(x); });
    case Unary::cos:
      return float_map(a, [](auto x) { return std::cos(x); });
    case Unary::tanh:
      return float_map(a, [](auto x) { return std::tanh(x); });
    case Unary::sigmoid:
      return float_map(a, [](auto x) { return decltype(x)(1) / (decltype(x)(1) + std::exp(-x)); });
  }
  throw std::logic_error("unary: unknown op");
}

Tensor gelu(const Tensor& a, bool tanh_approximation) {
  if (tanh_approximation) return float_map(a, [](auto x) { return arith::gelu_tanh(x); });
  return float_map(a, [](auto x) { return arith::gelu_erf(x); });
}

Tensor pow(const Tensor& a, const Scalar& exponent) {
  DType dt = ops::result_type(a, exponent);
  return visit_compute(dt, [&](auto tag) -> Tensor {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      return float_pow<T>(a, dt, exponent);
    } else {
      // Integral base and exponent (the ops layer refuses negative ones, as torch does).
      const int64_t e = exponent.to_int();
      return map<int64_t>(a, dt, [e](int64_t x) -> int64_t { return arith::ipow(x, e); });
    }
  });
}

}  // namespace aotgrad::kernels
