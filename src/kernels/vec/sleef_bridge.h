// SLEEF's AVX2 and AVX-512 entry points behind plain pointers, for code that cannot pass them
// 256- or 512-bit vectors in registers.
//
// Why: SLEEF's AVX entry points take and return vectors in ymm / zmm registers. GCC decides how
// a call passes a vector from the calling function's target attribute, so Highway's per-target
// code (compiled for baseline x86-64 with a target("avx2") or target("avx512f") attribute) calls
// them directly. Clang decides it from the whole file's -m flags: in a baseline file it passes
// 256- and 512-bit vectors on the stack, the callee reads registers, and the result is garbage
// wherever the register did not happen to hold the argument (pow's second operand; issue 11's
// clang failures). Each function here is compiled in a file of its own with its ISA's -m flags
// (CMakeLists.txt), reads one vector of lanes from `x` (and `y`) and writes one to `out`, which
// may alias. math-inl.h calls these under clang and SLEEF directly under GCC.
//
// Only call an ISA's functions on a CPU that has that ISA (Highway's AVX2 / AVX3 targets do).
// Thread-safety: pure functions.
#pragma once

// X(name, sleef_function, precision) for each unary function; pow is the one binary function.
#define AOTGRAD_SLEEF_BRIDGE_UNARY(X) \
  X(exp, exp, u10)                    \
  X(log, log, u10)                    \
  X(tanh, tanh, u35)                  \
  X(sin, sin, u35)                    \
  X(cos, cos, u35)                    \
  X(erf, erf, u10)                    \
  X(erfc, erfc, u15)

#define AOTGRAD_SLEEF_BRIDGE_DECLARE(name, fn, prec) \
  void name##_f32(const float* x, float* out);       \
  void name##_f64(const double* x, double* out);

namespace aotgrad::kernels::vec::sleef_bridge {

namespace avx2 {
AOTGRAD_SLEEF_BRIDGE_UNARY(AOTGRAD_SLEEF_BRIDGE_DECLARE)
void pow_f32(const float* x, const float* y, float* out);
void pow_f64(const double* x, const double* y, double* out);
}  // namespace avx2

namespace avx512 {
AOTGRAD_SLEEF_BRIDGE_UNARY(AOTGRAD_SLEEF_BRIDGE_DECLARE)
void pow_f32(const float* x, const float* y, float* out);
void pow_f64(const double* x, const double* y, double* out);
}  // namespace avx512

}  // namespace aotgrad::kernels::vec::sleef_bridge

#undef AOTGRAD_SLEEF_BRIDGE_DECLARE
