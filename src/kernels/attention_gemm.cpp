// strip_gemm (kernels/attention_gemm.h), compiled once per Highway target (hwy/foreach_target.h
// re-includes this file with HWY_TARGET set to each ISA in turn). Reading guide: Tile computes R
// rows of C by one or two vectors of columns, its accumulators in registers for the whole of k;
// Gemm walks C by panels of two vectors (the last one masked) and R rows at a time. No packing:
// B's rows are read in place (a panel of k rows stays in L1 across the R-row tiles), A's elements
// are broadcast from wherever they lie.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/attention_gemm.cpp"
#include "kernels/attention_gemm.h"

#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>

HWY_BEFORE_NAMESPACE();
namespace aotgrad::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using MF = hn::Mask<DF>;

// Rows per tile: 2R accumulators, two B vectors and a broadcast must fit the register file
// (32 vector registers with AVX-512, 16 below).
constexpr int kTileRows = hn::MaxLanes(DF()) >= 16 ? 8 : 4;

// C[r, 0:V lanes] for r < R, the columns past the masks' lanes left alone.
template <int R, int V>
HWY_INLINE void Tile(const float* a, int64_t a_row, int64_t a_col, const float* b, int64_t ldb,
                     int64_t k, float* c, int64_t ldc, MF m0, MF m1) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  VF acc0[R], acc1[R];
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    acc0[r] = hn::Zero(d);
    acc1[r] = hn::Zero(d);
  }
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    const VF b0 = hn::MaskedLoad(m0, d, bp);
    const VF b1 = V == 2 ? hn::MaskedLoad(m1, d, bp + lanes) : hn::Zero(d);
    const float* ap = a + p * a_col;
    _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
      const VF x = hn::Set(d, ap[r * a_row]);
      acc0[r] = hn::MulAdd(x, b0, acc0[r]);
      if (V == 2) acc1[r] = hn::MulAdd(x, b1, acc1[r]);
    }
  }
  _Pragma("GCC unroll 8") for (int r = 0; r < R; ++r) {
    hn::BlendedStore(acc0[r], m0, d, c + r * ldc);
    if (V == 2) hn::BlendedStore(acc1[r], m1, d, c + r * ldc + lanes);
  }
}

// The rows [i, m) of one panel, R at a time, then the rest one at a time.
template <int V>
HWY_INLINE void Panel(int64_t m, int64_t k, const float* a, int64_t a_row, int64_t a_col,
                      const float* b, int64_t ldb, float* c, int64_t ldc, MF m0, MF m1) {
  int64_t i = 0;
  for (; i + kTileRows <= m; i += kTileRows)
    Tile<kTileRows, V>(a + i * a_row, a_row, a_col, b, ldb, k, c + i * ldc, ldc, m0, m1);
  for (; i < m; ++i) Tile<1, V>(a + i * a_row, a_row, a_col, b, ldb, k, c + i * ldc, ldc, m0, m1);
}

void Gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
          const float* b, int64_t ldb, float* c, int64_t ldc) {
  const DF d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t j = 0; j < n; j += 2 * lanes) {
    const int64_t width = std::min(n - j, 2 * lanes);
    const MF m0 = hn::FirstN(d, static_cast<size_t>(std::min(width, lanes)));
    if (width > lanes) {
      const MF m1 = hn::FirstN(d, static_cast<size_t>(width - lanes));
      Panel<2>(m, k, a, a_row, a_col, b + j, ldb, c + j, ldc, m0, m1);
    } else {
      Panel<1>(m, k, a, a_row, a_col, b + j, ldb, c + j, ldc, m0, m0);
    }
  }
}

}  // namespace aotgrad::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace aotgrad::kernels {

HWY_EXPORT(Gemm);

void strip_gemm(int64_t m, int64_t n, int64_t k, const float* a, int64_t a_row, int64_t a_col,
                const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  HWY_DYNAMIC_DISPATCH(Gemm)(m, n, k, a, a_row, a_col, b, ldb, c, ldc);
}

}  // namespace aotgrad::kernels
#endif  // HWY_ONCE
