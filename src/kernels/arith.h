// Element math shared by the pointwise kernels: dtype visitors over the compute types, integer
// arithmetic that wraps like ATen's (signed overflow is UB in C++, two's complement in torch), and
// the GELU formulas (forward and derivative), written once for float and double.
#pragma once

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "tensor/dtype_dispatch.h"
#include "tensor/promotion.h"

namespace aotgrad::kernels {

// Calls f(TypeTag<T>) for the type arithmetic on results of dtype `t` runs in (f16/bf16 -> float).
template <typename F>
decltype(auto) visit_compute(DType t, F&& f) {
  switch (compute_dtype(t)) {
    case DType::f32:
      return f(TypeTag<float>{});
    case DType::f64:
      return f(TypeTag<double>{});
    case DType::i64:
      return f(TypeTag<int64_t>{});
    case DType::b8:
      return f(TypeTag<bool>{});
    case DType::u8:
      return f(TypeTag<uint8_t>{});
    case DType::i32:
      return f(TypeTag<int32_t>{});
    default:
      break;
  }
  throw std::logic_error("visit_compute: no compute type for " + std::string(dtype_name(t)));
}

// Like visit_compute, for ops defined on floating types only; callers have checked the dtype.
template <typename F>
decltype(auto) visit_float(DType t, F&& f) {
  switch (compute_dtype(t)) {
    case DType::f32:
      return f(TypeTag<float>{});
    case DType::f64:
      return f(TypeTag<double>{});
    default:
      break;
  }
  throw std::logic_error("visit_float: " + std::string(dtype_name(t)) + " is not floating");
}

namespace arith {

// bool arithmetic is logical (torch: True + True == True, True * False == False).
template <typename T>
T add(T x, T y) {
  if constexpr (std::is_same_v<T, bool>)
    return x || y;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(x) + static_cast<uint64_t>(y));
  else
    return x + y;
}

template <typename T>
T sub(T x, T y) {
  if constexpr (std::is_same_v<T, bool>)
    return x != y;  // unreachable: meta refuses b8 - b8
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(x) - static_cast<uint64_t>(y));
  else
    return x - y;
}

template <typename T>
T mul(T x, T y) {
  if constexpr (std::is_same_v<T, bool>)
    return x && y;
  else if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
  else
    return x * y;
}

template <typename T>
T neg(T x) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(0 - static_cast<uint64_t>(x));
  else
    return -x;
}

// x^e for integral x and e >= 0, by squaring (wrapping on overflow).
inline int64_t ipow(int64_t x, int64_t e) {
  uint64_t result = 1, base = static_cast<uint64_t>(x);
  while (e > 0) {
    if (e & 1) result *= base;
    base *= base;
    e >>= 1;
  }
  return static_cast<int64_t>(result);
}

// The constants ATen uses, so results match torch.nn.functional.gelu to rounding.
inline constexpr double kSqrt1_2 = 0.70710678118654752440;      // 1/sqrt(2)
inline constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/sqrt(2*pi)
inline constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2/pi)
inline constexpr double kGeluKappa = 0.044715;

template <typename T>
T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + std::erf(x * T(kSqrt1_2)));
}

template <typename T>
T gelu_tanh(T x) {
  T inner = T(kSqrt2OverPi) * (x + T(kGeluKappa) * x * x * x);
  return T(0.5) * x * (T(1) + std::tanh(inner));
}

// d/dx of x * Phi(x) = Phi(x) + x * phi(x).
template <typename T>
T gelu_erf_derivative(T x) {
  T cdf = T(0.5) * (T(1) + std::erf(x * T(kSqrt1_2)));
  T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
  return cdf + x * pdf;
}

template <typename T>
T gelu_tanh_derivative(T x) {
  T x_sq = x * x;
  T inner = T(kSqrt2OverPi) * (x + T(kGeluKappa) * x_sq * x);
  T t = std::tanh(inner);
  T left_derivative = T(0.5) * (T(1) + t);
  T right_derivative =
      T(0.5) * x * (T(1) - t * t) * T(kSqrt2OverPi) * (T(1) + T(3 * kGeluKappa) * x_sq);
  return left_derivative + right_derivative;
}

}  // namespace arith
}  // namespace aotgrad::kernels
