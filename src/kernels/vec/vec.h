// Vector kernels over contiguous arrays, compiled for several x86 ISAs and chosen at run time.
//
// Reading guide: one binary runs on any x86-64. kernels.cpp is compiled once per Highway target
// (AVX-512 "AVX3", AVX2+FMA, SSE4 and the portable "SCALAR" fallback); each copy fills a Target:
// tables of plain function pointers, indexed by UnaryFn / BinaryFn. active() is the best Target
// this CPU runs, picked once; the elementwise engine (elementwise.h) calls its kernels on the
// contiguous spans it feeds them. supported() lists every compiled Target the CPU runs, so tests
// and benches can check that each gives the same answers.
//
// Numbers: exp, log, tanh, sin, cos and pow come from SLEEF (its per-ISA entry points, which
// state their ULP bounds); erf and GELU's normal CDF use our own f32 polynomials
// (math-inl.h); arithmetic is IEEE (add, sub, mul, div, sqrt round correctly and give the same
// bits on every target). The bound each op keeps is stated in tests/kernels/vec_ulp_test.cpp and
// docs/performance.md.
//
// Writing a new Highway kernel elsewhere (a reduction, softmax): make a translation unit that
// includes "hwy/foreach_target.h" with HWY_TARGET_INCLUDE naming itself, then
// "hwy/highway.h" and "kernels/vec/math-inl.h" (Exp, Log, Sigmoid, ... for every target), and
// dispatch with HWY_EXPORT / HWY_DYNAMIC_DISPATCH; kernels.cpp is the worked example. CMake
// compiles every file for the same targets (HWY_DISABLED_TARGETS in CMakeLists.txt).
//
// Thread-safety: every kernel is a pure function of its arguments; active() and supported() are
// initialized once, thread-safely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace aotgrad::kernels::vec {

// y[i] = f(x[i]), with p the kernel's scalar parameter where one is named.
enum class UnaryFn : uint8_t {
  neg,
  relu,  // x < 0 ? 0 : x (NaN and -0 pass through)
  exp,
  log,
  sqrt,
  rsqrt,
  sin,
  cos,
  tanh,
  sigmoid,
  erf,
  gelu_erf,   // x * Phi(x)
  gelu_tanh,  // x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
  silu,       // x * sigmoid(x)
  pow,        // x^p; p in {1, 2, 3, 0.5, -0.5, -1, -2} take exact forms, as ATen's
  kCount
};

// y[i] = f(a[i], b[i]), with p the kernel's scalar parameter where one is named.
enum class BinaryFn : uint8_t {
  add,                 // a + p * b (p == 1: a + b, one rounding)
  sub,                 // a - p * b
  mul,                 // a * b
  div,                 // a / b
  tanh_backward,       // a * (1 - b^2), b = tanh's output
  sigmoid_backward,    // a * (1 - b) * b, b = sigmoid's output
  threshold_backward,  // b <= p ? 0 : a
  gelu_erf_backward,   // a * d/db gelu_erf(b)
  gelu_tanh_backward,  // a * d/db gelu_tanh(b)
  silu_backward,       // a * d/db silu(b)
  kCount
};

// Which operand of a binary kernel is a single value read for every element.
enum class Broadcast : uint8_t { none, a, b, kCount };

template <typename T>
using UnaryKernel = void (*)(const T* x, T* y, int64_t n, T p);
template <typename T>
using BinaryKernel = void (*)(const T* a, const T* b, T* y, int64_t n, T p);

template <typename T>
struct Kernels {
  UnaryKernel<T> unary[static_cast<size_t>(UnaryFn::kCount)];
  BinaryKernel<T> binary[static_cast<size_t>(BinaryFn::kCount)]
                        [static_cast<size_t>(Broadcast::kCount)];
  // y[i] = exp(x[i] - shift); returns the sum of y (softmax's numerator and denominator).
  T (*exp_shift_sum)(const T* x, T shift, T* y, int64_t n);

  UnaryKernel<T> operator[](UnaryFn f) const { return unary[static_cast<size_t>(f)]; }
  BinaryKernel<T> operator()(BinaryFn f, Broadcast b) const {
    return binary[static_cast<size_t>(f)][static_cast<size_t>(b)];
  }
};

// The kernels of one compiled ISA.
struct Target {
  const char* name;    // Highway's name: "AVX3", "AVX2", "SSE4", "SCALAR", ...
  int64_t hwy_target;  // its HWY_* bit
  Kernels<float> f32;
  Kernels<double> f64;

  template <typename T>
  const Kernels<T>& of() const {
    if constexpr (sizeof(T) == 4)
      return f32;
    else
      return f64;
  }
};

// The best compiled target this CPU runs.
const Target& active();
// Every compiled target this CPU runs, best first; the last is the portable fallback.
std::span<const Target* const> supported();

}  // namespace aotgrad::kernels::vec
