// The avx2 functions of vec/sleef_bridge.h. CMakeLists.txt compiles this file with -mavx2 -mfma, so
// that every compiler passes SLEEF's vectors in registers here; nothing else may live in it (its
// code runs only on CPUs with that ISA).
#include <immintrin.h>
#include <sleef.h>

#include "kernels/vec/sleef_bridge.h"

namespace aotgrad::kernels::vec::sleef_bridge::avx2 {

#define AOTGRAD_SLEEF_BRIDGE_DEFINE(name, fn, prec)                         \
  void name##_f32(const float* x, float* out) {                             \
    _mm256_storeu_ps(out, Sleef_##fn##f8_##prec##avx2(_mm256_loadu_ps(x))); \
  }                                                                         \
  void name##_f64(const double* x, double* out) {                           \
    _mm256_storeu_pd(out, Sleef_##fn##d4_##prec##avx2(_mm256_loadu_pd(x))); \
  }
AOTGRAD_SLEEF_BRIDGE_UNARY(AOTGRAD_SLEEF_BRIDGE_DEFINE)
#undef AOTGRAD_SLEEF_BRIDGE_DEFINE

void pow_f32(const float* x, const float* y, float* out) {
  _mm256_storeu_ps(out, Sleef_powf8_u10avx2(_mm256_loadu_ps(x), _mm256_loadu_ps(y)));
}

void pow_f64(const double* x, const double* y, double* out) {
  _mm256_storeu_pd(out, Sleef_powd4_u10avx2(_mm256_loadu_pd(x), _mm256_loadu_pd(y)));
}

}  // namespace aotgrad::kernels::vec::sleef_bridge::avx2
