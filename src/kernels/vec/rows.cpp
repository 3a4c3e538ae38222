// The kernels of vec/rows.h, compiled once per Highway target (hwy/foreach_target.h re-includes
// this file with HWY_TARGET set to each ISA in turn).
//
// Reading guide: each kernel walks full vectors, then finishes the last n % lanes elements by
// copying them into a one-vector buffer (padded with a neutral value: -inf for a maximum, 0 for
// a sum) and running the same vector code on it, so a row's tail is computed exactly like its
// body. Float sums that leave a kernel are reduced across lanes in double. The HWY_ONCE part at
// the end is compiled once and picks the target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vec/rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
// After highway.h (clang-format: keep this block apart): contrib headers are per-target too.
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/vec/rows.h"

HWY_BEFORE_NAMESPACE();
namespace aotgrad::kernels::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
using DD = hn::ScalableTag<double>;
using DFHalf = hn::Rebind<float, DD>;  // as many floats as DD has doubles

// The sum of a float vector's lanes, in double.
double LaneSum(DF d, VF v) {
  HWY_ALIGN float lanes[hn::MaxLanes(DF())];
  hn::Store(v, d, lanes);
  double s = 0;
  for (size_t i = 0; i < hn::Lanes(d); ++i) s += static_cast<double>(lanes[i]);
  return s;
}

double LaneSum(DD d, hn::Vec<DD> v) {
  HWY_ALIGN double lanes[hn::MaxLanes(DD())];
  hn::Store(v, d, lanes);
  double s = 0;
  for (size_t i = 0; i < hn::Lanes(d); ++i) s += lanes[i];
  return s;
}

// exp that keeps NaN (Highway's Exp maps NaN to 0).
HWY_INLINE VF ExpNaN(DF d, VF x) {
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Exp(d, x));
}

// Calls f(offset, count) once for the last n % lanes elements, if any (full vectors are the
// callers' loops); f reads and writes them through LoadTail / StoreTail.
template <class F>
HWY_INLINE void ForTail(int64_t n, int64_t lanes, F&& f) {
  const int64_t full = n / lanes * lanes;
  if (full < n) f(full, n - full);
}

// Loads the n - offset < lanes tail of p into a vector, the other lanes `fill`.
HWY_INLINE VF LoadTail(DF d, const float* p, int64_t count, float fill) {
  HWY_ALIGN float buf[hn::MaxLanes(DF())];
  for (size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = fill;
  std::memcpy(buf, p, static_cast<size_t>(count) * sizeof(float));
  return hn::Load(d, buf);
}

HWY_INLINE void StoreTail(DF d, VF v, float* p, int64_t count) {
  HWY_ALIGN float buf[hn::MaxLanes(DF())];
  hn::Store(v, d, buf);
  std::memcpy(p, buf, static_cast<size_t>(count) * sizeof(float));
}

float MaxOf(const float* x, int64_t n) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const float ninf = -std::numeric_limits<float>::infinity();
  VF m0 = hn::Set(d, ninf), m1 = m0;
  if (n == 0) return ninf;
  // A NaN anywhere must win: track it apart, since Max may drop it.
  auto nan = hn::FirstN(d, 0);
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const VF a = hn::LoadU(d, x + i), b = hn::LoadU(d, x + i + L);
    nan = hn::Or(nan, hn::Or(hn::IsNaN(a), hn::IsNaN(b)));
    m0 = hn::Max(m0, a);
    m1 = hn::Max(m1, b);
  }
  for (; i + L <= n; i += L) {
    const VF a = hn::LoadU(d, x + i);
    nan = hn::Or(nan, hn::IsNaN(a));
    m0 = hn::Max(m0, a);
  }
  ForTail(n, L, [&](int64_t off, int64_t count) {
    const VF a = LoadTail(d, x + off, count, ninf);
    nan = hn::Or(nan, hn::IsNaN(a));
    m0 = hn::Max(m0, a);
  });
  if (!hn::AllFalse(d, nan)) return std::numeric_limits<float>::quiet_NaN();
  return hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
}

void Softmax(const float* x, float* y, int64_t n, bool log) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  // Subtracting the max keeps exp() <= 1: no overflow however large the logits.
  const float ninf = -std::numeric_limits<float>::infinity();
  const VF mx = hn::Set(d, MaxOf(x, n));
  VF s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  // Pass 1: exp(x - max) summed (and kept in y for softmax: one exp per element).
  for (; i + 2 * L <= n; i += 2 * L) {
    const VF e0 = ExpNaN(d, hn::Sub(hn::LoadU(d, x + i), mx));
    const VF e1 = ExpNaN(d, hn::Sub(hn::LoadU(d, x + i + L), mx));
    if (!log) {
      hn::StoreU(e0, d, y + i);
      hn::StoreU(e1, d, y + i + L);
    }
    s0 = hn::Add(s0, e0);
    s1 = hn::Add(s1, e1);
  }
  for (; i + L <= n; i += L) {
    const VF e = ExpNaN(d, hn::Sub(hn::LoadU(d, x + i), mx));
    if (!log) hn::StoreU(e, d, y + i);
    s0 = hn::Add(s0, e);
  }
  ForTail(n, L, [&](int64_t off, int64_t count) {
    // Padding -inf: exp(-inf - max) = 0 adds nothing (max is finite or the row is NaN anyway).
    const VF e = ExpNaN(d, hn::Sub(LoadTail(d, x + off, count, ninf), mx));
    if (!log) StoreTail(d, e, y + off, count);
    s0 = hn::Add(s0, e);
  });
  const double sum = LaneSum(d, hn::Add(s0, s1));
  // Pass 2: scale by 1 / sum, or subtract max + log(sum).
  if (log) {
    const VF k = hn::Set(d, static_cast<float>(std::log(sum)));
    for (i = 0; i + L <= n; i += L)
      hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), mx), k), d, y + i);
    ForTail(n, L, [&](int64_t off, int64_t count) {
      StoreTail(d, hn::Sub(hn::Sub(LoadTail(d, x + off, count, 0), mx), k), y + off, count);
    });
    return;
  }
  const VF k = hn::Set(d, static_cast<float>(1.0 / sum));
  for (i = 0; i + L <= n; i += L) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), k), d, y + i);
  ForTail(n, L, [&](int64_t off, int64_t count) {
    StoreTail(d, hn::Mul(LoadTail(d, y + off, count, 0), k), y + off, count);
  });
}

void SoftmaxBackward(const float* g, const float* y, float* r, int64_t n, bool log) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  // Pass 1: sum(g) (log) or sum(g * y), lanes in float, merged in double.
  VF s0 = hn::Zero(d), s1 = hn::Zero(d);
  int64_t i = 0;
  auto term = [&](VF gv, VF yv) { return log ? gv : hn::Mul(gv, yv); };
  for (; i + 2 * L <= n; i += 2 * L) {
    s0 = hn::Add(s0, term(hn::LoadU(d, g + i), hn::LoadU(d, y + i)));
    s1 = hn::Add(s1, term(hn::LoadU(d, g + i + L), hn::LoadU(d, y + i + L)));
  }
  for (; i + L <= n; i += L) s0 = hn::Add(s0, term(hn::LoadU(d, g + i), hn::LoadU(d, y + i)));
  ForTail(n, L, [&](int64_t off, int64_t count) {
    s0 = hn::Add(s0, term(LoadTail(d, g + off, count, 0), LoadTail(d, y + off, count, 0)));
  });
  const VF a = hn::Set(d, static_cast<float>(LaneSum(d, hn::Add(s0, s1))));
  // Pass 2.
  auto out = [&](VF gv, VF yv) {
    return log ? hn::NegMulAdd(ExpNaN(d, yv), a, gv) : hn::Mul(yv, hn::Sub(gv, a));
  };
  for (i = 0; i + L <= n; i += L)
    hn::StoreU(out(hn::LoadU(d, g + i), hn::LoadU(d, y + i)), d, r + i);
  ForTail(n, L, [&](int64_t off, int64_t count) {
    StoreTail(d, out(LoadTail(d, g + off, count, 0), LoadTail(d, y + off, count, 0)), r + off,
              count);
  });
}

double Sum(const float* x, int64_t n) {
  const DD dd;
  const DFHalf dh;
  const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
  // Four accumulators: an add's latency is four times its issue interval.
  auto s0 = hn::Zero(dd), s1 = hn::Zero(dd), s2 = hn::Zero(dd), s3 = hn::Zero(dd);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = hn::Add(s0, hn::PromoteTo(dd, hn::LoadU(dh, x + i)));
    s1 = hn::Add(s1, hn::PromoteTo(dd, hn::LoadU(dh, x + i + L)));
    s2 = hn::Add(s2, hn::PromoteTo(dd, hn::LoadU(dh, x + i + 2 * L)));
    s3 = hn::Add(s3, hn::PromoteTo(dd, hn::LoadU(dh, x + i + 3 * L)));
  }
  for (; i + L <= n; i += L) s0 = hn::Add(s0, hn::PromoteTo(dd, hn::LoadU(dh, x + i)));
  double s = LaneSum(dd, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3)));
  for (; i < n; ++i) s += static_cast<double>(x[i]);
  return s;
}

void AddRows(double* acc, const float* x, int64_t stride, int64_t rows, int64_t n) {
  const DD dd;
  const DFHalf dh;
  const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
  // Four rows per pass over acc: a quarter of the accumulator loads and stores. Each element
  // still adds rows in order, so the result does not depend on the blocking.
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* x0 = x + r * stride;
    const float *x1 = x0 + stride, *x2 = x1 + stride, *x3 = x2 + stride;
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      auto a = hn::LoadU(dd, acc + i);
      a = hn::Add(a, hn::PromoteTo(dd, hn::LoadU(dh, x0 + i)));
      a = hn::Add(a, hn::PromoteTo(dd, hn::LoadU(dh, x1 + i)));
      a = hn::Add(a, hn::PromoteTo(dd, hn::LoadU(dh, x2 + i)));
      a = hn::Add(a, hn::PromoteTo(dd, hn::LoadU(dh, x3 + i)));
      hn::StoreU(a, dd, acc + i);
    }
    for (; i < n; ++i)
      acc[i] = (((acc[i] + static_cast<double>(x0[i])) + static_cast<double>(x1[i])) +
                static_cast<double>(x2[i])) +
               static_cast<double>(x3[i]);
  }
  for (; r < rows; ++r) {
    const float* xr = x + r * stride;
    int64_t i = 0;
    for (; i + L <= n; i += L)
      hn::StoreU(hn::Add(hn::LoadU(dd, acc + i), hn::PromoteTo(dd, hn::LoadU(dh, xr + i))), dd,
                 acc + i);
    for (; i < n; ++i) acc[i] += static_cast<double>(xr[i]);
  }
}

double SquaredDistance(const float* a, const float* b, int64_t n) {
  const DD dd;
  const DFHalf dh;
  const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
  auto s0 = hn::Zero(dd), s1 = hn::Zero(dd);
  int64_t i = 0;
  // The difference rounds to float first, as the scalar loop (and torch) computes it.
  auto diff = [&](int64_t k) {
    return hn::PromoteTo(dd, hn::Sub(hn::LoadU(dh, a + k), hn::LoadU(dh, b + k)));
  };
  for (; i + 2 * L <= n; i += 2 * L) {
    const auto d0 = diff(i), d1 = diff(i + L);
    s0 = hn::MulAdd(d0, d0, s0);
    s1 = hn::MulAdd(d1, d1, s1);
  }
  double s = LaneSum(dd, hn::Add(s0, s1));
  for (; i < n; ++i) {
    const double dv = static_cast<double>(a[i] - b[i]);
    s += dv * dv;
  }
  return s;
}

void ScaledDifference(const float* a, const float* b, const float* g, int64_t g_stride, float scale,
                      float* out, int64_t n) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF k = hn::Set(d, scale);
  int64_t i = 0;
  if (g_stride == 0) {
    const VF gv = hn::Set(d, g[0]);
    for (; i + L <= n; i += L)
      hn::StoreU(hn::Mul(hn::Mul(k, hn::Sub(hn::LoadU(d, a + i), hn::LoadU(d, b + i))), gv), d,
                 out + i);
    for (; i < n; ++i) out[i] = scale * (a[i] - b[i]) * g[0];
    return;
  }
  for (; i + L <= n; i += L)
    hn::StoreU(
        hn::Mul(hn::Mul(k, hn::Sub(hn::LoadU(d, a + i), hn::LoadU(d, b + i))), hn::LoadU(d, g + i)),
        d, out + i);
  for (; i < n; ++i) out[i] = scale * (a[i] - b[i]) * g[i];
}

// Two passes over the row, in double: the sum, then the squared deviations from the mean. A
// layer-norm row is small enough to stay in L1 between them, and each pass runs four independent
// accumulators, bound by load and add throughput; a Welford pass is bound instead by the
// latency of its running mean (each step needs the last), and merging its lanes costs a division
// per lane, which dominated rows of a few hundred elements. In double, the two-pass result is at
// least as exact as Welford's.
void Moments(const float* x, int64_t n, double* mean_out, double* m2_out) {
  const DD dd;
  const DFHalf dh;
  const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
  auto load = [&](int64_t i) { return hn::PromoteTo(dd, hn::LoadU(dh, x + i)); };
  auto s0 = hn::Zero(dd), s1 = hn::Zero(dd), s2 = hn::Zero(dd), s3 = hn::Zero(dd);
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 = hn::Add(s0, load(i));
    s1 = hn::Add(s1, load(i + L));
    s2 = hn::Add(s2, load(i + 2 * L));
    s3 = hn::Add(s3, load(i + 3 * L));
  }
  for (; i + L <= n; i += L) s0 = hn::Add(s0, load(i));
  double sum = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
  for (; i < n; ++i) sum += static_cast<double>(x[i]);
  // An empty row: mean 0 and m2 0 (the caller's 0/0 variance is then NaN, as torch's).
  const double mu = n > 0 ? sum / static_cast<double>(n) : 0.0;
  const auto m = hn::Set(dd, mu);
  auto q0 = hn::Zero(dd), q1 = hn::Zero(dd), q2 = hn::Zero(dd), q3 = hn::Zero(dd);
  auto sq = [&](int64_t k, decltype(q0) acc) {
    const auto dv = hn::Sub(load(k), m);
    return hn::MulAdd(dv, dv, acc);
  };
  i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    q0 = sq(i, q0);
    q1 = sq(i + L, q1);
    q2 = sq(i + 2 * L, q2);
    q3 = sq(i + 3 * L, q3);
  }
  for (; i + L <= n; i += L) q0 = sq(i, q0);
  double q = hn::GetLane(hn::SumOfLanes(dd, hn::Add(hn::Add(q0, q1), hn::Add(q2, q3))));
  for (; i < n; ++i) {
    const double dv = static_cast<double>(x[i]) - mu;
    q += dv * dv;
  }
  *mean_out = mu;
  *m2_out = q;
}

void Normalize(const float* x, float mean, float rstd, const float* w, const float* b, float* y,
               int64_t n) {
  const DF d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF mu = hn::Set(d, mean), rs = hn::Set(d, rstd);
  auto one = [&](VF xv, VF wv, VF bv) {
    VF v = hn::Mul(hn::Sub(xv, mu), rs);
    if (w) v = hn::Mul(v, wv);
    if (b) v = hn::Add(v, bv);
    return v;
  };
  const VF zero = hn::Zero(d);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    hn::StoreU(
        one(hn::LoadU(d, x + i), w ? hn::LoadU(d, w + i) : zero, b ? hn::LoadU(d, b + i) : zero), d,
        y + i);
  for (; i < n; ++i) {
    float v = (x[i] - mean) * rstd;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = v;
  }
}

void LayerNormBackward(const float* g, const float* x, float mean, float rstd, const float* w,
                       float* dx, float* pw, float* pb, int64_t n) {
  const DF d;
  const DD dd;
  const DFHalf dh;
  const VF mu = hn::Set(d, mean), rs = hn::Set(d, rstd);
  float c1 = 0, c2 = 0;
  if (dx) {
    // The two means, over double lanes (half a float vector at a time).
    const int64_t L = static_cast<int64_t>(hn::Lanes(dd));
    const auto muh = hn::Set(dh, mean), rsh = hn::Set(dh, rstd);
    auto s1 = hn::Zero(dd), s2 = hn::Zero(dd);
    int64_t i = 0;
    for (; i + L <= n; i += L) {
      auto gw = hn::LoadU(dh, g + i);
      if (w) gw = hn::Mul(gw, hn::LoadU(dh, w + i));
      const auto xhat = hn::Mul(hn::Sub(hn::LoadU(dh, x + i), muh), rsh);
      s1 = hn::Add(s1, hn::PromoteTo(dd, gw));
      s2 = hn::Add(s2, hn::PromoteTo(dd, hn::Mul(gw, xhat)));
    }
    double sum_gw = LaneSum(dd, s1), sum_gw_xhat = LaneSum(dd, s2);
    for (; i < n; ++i) {
      const float gw = w ? g[i] * w[i] : g[i];
      sum_gw += static_cast<double>(gw);
      sum_gw_xhat += static_cast<double>(gw * ((x[i] - mean) * rstd));
    }
    c1 = static_cast<float>(sum_gw / static_cast<double>(n));
    c2 = static_cast<float>(sum_gw_xhat / static_cast<double>(n));
  }
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF k1 = hn::Set(d, c1), k2 = hn::Set(d, c2);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const VF gv = hn::LoadU(d, g + i);
    const VF xhat = hn::Mul(hn::Sub(hn::LoadU(d, x + i), mu), rs);
    if (dx) {
      const VF gw = w ? hn::Mul(gv, hn::LoadU(d, w + i)) : gv;
      hn::StoreU(hn::Mul(rs, hn::Sub(hn::Sub(gw, k1), hn::Mul(xhat, k2))), d, dx + i);
    }
    if (pw) hn::StoreU(hn::Add(hn::LoadU(d, pw + i), hn::Mul(gv, xhat)), d, pw + i);
    if (pb) hn::StoreU(hn::Add(hn::LoadU(d, pb + i), gv), d, pb + i);
  }
  for (; i < n; ++i) {
    const float xhat = (x[i] - mean) * rstd;
    if (dx) dx[i] = rstd * (((w ? g[i] * w[i] : g[i]) - c1) - xhat * c2);
    if (pw) pw[i] += g[i] * xhat;
    if (pb) pb[i] += g[i];
  }
}

// x[i] = mask[i] ? fill : x[i] * scale (masked_fill after a scale, as attention applies them;
// a masked element is `fill` whatever x[i] was, NaN included).
void ScaleOrFill(float* x, const bool* mask, float scale, float fill, int64_t n) {
  const DF d;
  const hn::Rebind<uint8_t, DF> d8;
  const hn::RebindToUnsigned<DF> du;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const VF k = hn::Set(d, scale), f = hn::Set(d, fill);
  const uint8_t* m = reinterpret_cast<const uint8_t*>(mask);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto masked =
        hn::RebindMask(d, hn::Ne(hn::PromoteTo(du, hn::LoadU(d8, m + i)), hn::Zero(du)));
    hn::StoreU(hn::IfThenElse(masked, f, hn::Mul(hn::LoadU(d, x + i), k)), d, x + i);
  }
  for (; i < n; ++i) x[i] = mask[i] ? fill : x[i] * scale;
}

const RowKernels* GetRowKernels() {
  static const RowKernels kernels{hwy::TargetName(HWY_TARGET),
                                  &Softmax,
                                  &SoftmaxBackward,
                                  &Sum,
                                  &MaxOf,
                                  &AddRows,
                                  &SquaredDistance,
                                  &ScaledDifference,
                                  &Moments,
                                  &Normalize,
                                  &LayerNormBackward,
                                  &ScaleOrFill};
  return &kernels;
}

}  // namespace aotgrad::kernels::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace aotgrad::kernels::vec {

HWY_EXPORT(GetRowKernels);

const RowKernels& row_kernels() {
  static const RowKernels* const kernels = HWY_DYNAMIC_DISPATCH(GetRowKernels)();
  return *kernels;
}

std::span<const RowKernels* const> row_kernel_targets() {
  struct Compiled {
    int64_t bit;
    const RowKernels* (*get)();
  };
  // Best first, as Highway orders its targets.
  static const Compiled kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::GetRowKernels},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::GetRowKernels},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::GetRowKernels},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::GetRowKernels},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::GetRowKernels},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::GetRowKernels},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::GetRowKernels},
#endif
  };
  static const std::vector<const RowKernels*> list = [] {
    std::vector<const RowKernels*> v;
    const int64_t cpu = hwy::SupportedTargets() | HWY_EMU128 | HWY_SCALAR;
    for (const Compiled& c : kCompiled)
      if (cpu & c.bit) v.push_back(c.get());
    return v;
  }();
  return list;
}

}  // namespace aotgrad::kernels::vec
#endif  // HWY_ONCE
