// Per-target vector math: SLEEF's transcendentals on Highway vectors, and our own erf, normal
// CDF, logistic and GELU pieces built on them.
//
// A Highway "-inl.h" header: include it after "hwy/highway.h" in a translation unit that
// "hwy/foreach_target.h" compiles once per target (kernels.cpp); the toggle guard lets each
// target's pass see it once. Everything takes a Highway tag `d` and float or double vectors,
// and lives in aotgrad::kernels::vec::HWY_NAMESPACE.
//
// Reading guide:
//   - Exp, Log, Tanh, Sin, Cos, Pow: SLEEF's entry point for this target's ISA (SLEEF's own
//     dispatcher would pick by the CPU, not by the Highway target a test asks for). The
//     portable fallback target calls SLEEF's scalar "purec" entry lane by lane; clang builds
//     call the AVX2 / AVX-512 ones through vec/sleef_bridge.h (why: there).
//   - ErfcParts: erf/erfc in f32 from two polynomial fits of ours (SLEEF's erf costs as much
//     as libm's, 3 ns per element); f64 uses SLEEF's erf/erfc.
//   - Logistic: sigma(w) and 1 - sigma(w) for sigmoid, SiLU and GELU-tanh formulas.
// Two habits keep the ULP bounds in the tails (tests/kernels/vec_ulp_test.cpp):
//   1. An exp argument that is large is carried as hi + lo: the rounding of x*x alone costs
//      x^2 * 2^-24 relative, ~100 ulp in GELU's tail. TwoProdLo gives the lo part exactly.
//   2. exp(-|w|) is used as the square of exp(-|w|/2), multiplied in last, so a result that is
//      subnormal, or just above, never goes through a subnormal (imprecise) intermediate.
#if defined(AOTGRAD_KERNELS_VEC_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef AOTGRAD_KERNELS_VEC_MATH_INL_H_
#undef AOTGRAD_KERNELS_VEC_MATH_INL_H_
#else
#define AOTGRAD_KERNELS_VEC_MATH_INL_H_
#endif

#include <hwy/highway.h>

#include "kernels/vec/sleef_bridge.h"

// SLEEF's symbol for function `fn` at precision `prec` (u10 = 1.0 ulp, u35 = 3.5 ulp) for this
// target's vector width. SLEEF's header declares its AVX entry points only under -mavx, so the
// bridges below declare the ones they use themselves, inside the target's pragma region.
#undef AOTGRAD_SLEEF_NATIVE
#undef AOTGRAD_SLEEF_F32
#undef AOTGRAD_SLEEF_F64
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define AOTGRAD_SLEEF_NATIVE 1
#define AOTGRAD_SLEEF_F32(fn, prec) Sleef_##fn##f16_##prec##avx512f
#define AOTGRAD_SLEEF_F64(fn, prec) Sleef_##fn##d8_##prec##avx512f
#elif HWY_TARGET == HWY_AVX2
#define AOTGRAD_SLEEF_NATIVE 1
#define AOTGRAD_SLEEF_F32(fn, prec) Sleef_##fn##f8_##prec##avx2
#define AOTGRAD_SLEEF_F64(fn, prec) Sleef_##fn##d4_##prec##avx2
#elif HWY_TARGET == HWY_SSE4
#define AOTGRAD_SLEEF_NATIVE 1
#define AOTGRAD_SLEEF_F32(fn, prec) Sleef_##fn##f4_##prec##sse4
#define AOTGRAD_SLEEF_F64(fn, prec) Sleef_##fn##d2_##prec##sse4
#elif HWY_TARGET == HWY_SSSE3
#define AOTGRAD_SLEEF_NATIVE 1
#define AOTGRAD_SLEEF_F32(fn, prec) Sleef_##fn##f4_##prec##sse2
#define AOTGRAD_SLEEF_F64(fn, prec) Sleef_##fn##d2_##prec##sse2
#else
#define AOTGRAD_SLEEF_NATIVE 0
#define AOTGRAD_SLEEF_F32(fn, prec) Sleef_##fn##f1_##prec##purec
#define AOTGRAD_SLEEF_F64(fn, prec) Sleef_##fn##d1_##prec##purec
#endif

HWY_BEFORE_NAMESPACE();
namespace aotgrad::kernels::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if AOTGRAD_SLEEF_NATIVE
using SleefF32 = decltype(hn::Zero(hn::ScalableTag<float>()).raw);
using SleefF64 = decltype(hn::Zero(hn::ScalableTag<double>()).raw);
#else
using SleefF32 = float;
using SleefF64 = double;
#endif

// f(x) and f(x, y) on this target's native vectors, or lane by lane on the portable target.
template <class D, class V, typename Raw>
HWY_INLINE V CallSleef(D d, Raw (*f)(Raw), V x) {
#if AOTGRAD_SLEEF_NATIVE
  (void)d;
  return V{f(x.raw)};
#else
  HWY_ALIGN hn::TFromD<D> lanes[hn::MaxLanes(d)];
  hn::Store(x, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = f(lanes[i]);
  return hn::Load(d, lanes);
#endif
}

template <class D, class V, typename Raw>
HWY_INLINE V CallSleef(D d, Raw (*f)(Raw, Raw), V x, V y) {
#if AOTGRAD_SLEEF_NATIVE
  (void)d;
  return V{f(x.raw, y.raw)};
#else
  HWY_ALIGN hn::TFromD<D> xs[hn::MaxLanes(d)], ys[hn::MaxLanes(d)];
  hn::Store(x, d, xs);
  hn::Store(y, d, ys);
  for (size_t i = 0; i < hn::Lanes(d); ++i) xs[i] = f(xs[i], ys[i]);
  return hn::Load(d, xs);
#endif
}

// Clang passes 256- and 512-bit vectors to an external function in registers only when the
// whole file is compiled for AVX, which this baseline file is not: there, SLEEF's AVX2 and
// AVX-512 entry points are called through vec/sleef_bridge.h (one store and load per vector).
// GCC follows the calling function's target attribute and calls them directly.
#undef AOTGRAD_SLEEF_BRIDGE_ISA
#if HWY_COMPILER_CLANG && (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define AOTGRAD_SLEEF_BRIDGE_ISA avx512
#elif HWY_COMPILER_CLANG && HWY_TARGET == HWY_AVX2
#define AOTGRAD_SLEEF_BRIDGE_ISA avx2
#endif

#ifdef AOTGRAD_SLEEF_BRIDGE_ISA
// f(x) or f(x, y) through a bridge function that reads and writes lane arrays.
template <class D, class V, typename T>
HWY_INLINE V CallBridge(D d, void (*f)(const T*, T*), V x) {
  HWY_ALIGN T lanes[hn::MaxLanes(d)];
  hn::Store(x, d, lanes);
  f(lanes, lanes);
  return hn::Load(d, lanes);
}

template <class D, class V, typename T>
HWY_INLINE V CallBridge(D d, void (*f)(const T*, const T*, T*), V x, V y) {
  HWY_ALIGN T xs[hn::MaxLanes(d)], ys[hn::MaxLanes(d)];
  hn::Store(x, d, xs);
  hn::Store(y, d, ys);
  f(xs, ys, xs);
  return hn::Load(d, xs);
}

// Wraps the bridge of SLEEF's `fn` as Name(d, x).
#define AOTGRAD_SLEEF_UNARY(Name, fn, prec)                                       \
  template <class D, class V = hn::VFromD<D>>                                     \
  HWY_INLINE V Name(D d, V x) {                                                   \
    if constexpr (sizeof(hn::TFromD<D>) == 4)                                     \
      return CallBridge(d, &sleef_bridge::AOTGRAD_SLEEF_BRIDGE_ISA::fn##_f32, x); \
    else                                                                          \
      return CallBridge(d, &sleef_bridge::AOTGRAD_SLEEF_BRIDGE_ISA::fn##_f64, x); \
  }
#else
// Declares SLEEF's f32 and f64 entry points of `fn` for this target and wraps them as Name(d, x).
#define AOTGRAD_SLEEF_UNARY(Name, fn, prec)                  \
  extern "C" SleefF32 AOTGRAD_SLEEF_F32(fn, prec)(SleefF32); \
  extern "C" SleefF64 AOTGRAD_SLEEF_F64(fn, prec)(SleefF64); \
  template <class D, class V = hn::VFromD<D>>                \
  HWY_INLINE V Name(D d, V x) {                              \
    if constexpr (sizeof(hn::TFromD<D>) == 4)                \
      return CallSleef(d, &AOTGRAD_SLEEF_F32(fn, prec), x);  \
    else                                                     \
      return CallSleef(d, &AOTGRAD_SLEEF_F64(fn, prec), x);  \
  }
#endif

AOTGRAD_SLEEF_UNARY(Exp, exp, u10)
AOTGRAD_SLEEF_UNARY(Log, log, u10)
AOTGRAD_SLEEF_UNARY(Tanh, tanh, u35)
AOTGRAD_SLEEF_UNARY(Sin, sin, u35)
AOTGRAD_SLEEF_UNARY(Cos, cos, u35)
AOTGRAD_SLEEF_UNARY(ErfSleef, erf, u10)
AOTGRAD_SLEEF_UNARY(ErfcSleef, erfc, u15)
#undef AOTGRAD_SLEEF_UNARY

#ifdef AOTGRAD_SLEEF_BRIDGE_ISA
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Pow(D d, V x, V y) {
  if constexpr (sizeof(hn::TFromD<D>) == 4)
    return CallBridge(d, &sleef_bridge::AOTGRAD_SLEEF_BRIDGE_ISA::pow_f32, x, y);
  else
    return CallBridge(d, &sleef_bridge::AOTGRAD_SLEEF_BRIDGE_ISA::pow_f64, x, y);
}
#else
extern "C" SleefF32 AOTGRAD_SLEEF_F32(pow, u10)(SleefF32, SleefF32);
extern "C" SleefF64 AOTGRAD_SLEEF_F64(pow, u10)(SleefF64, SleefF64);
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Pow(D d, V x, V y) {
  if constexpr (sizeof(hn::TFromD<D>) == 4)
    return CallSleef(d, &AOTGRAD_SLEEF_F32(pow, u10), x, y);
  else
    return CallSleef(d, &AOTGRAD_SLEEF_F64(pow, u10), x, y);
}
#endif

// A constant given to f32 and f64 precision.
template <class D>
HWY_INLINE hn::VFromD<D> Const(D d, float f32, double f64) {
  if constexpr (sizeof(hn::TFromD<D>) == 4)
    return hn::Set(d, f32);
  else
    return hn::Set(d, f64);
}

// x * y - hi exactly, where hi = x * y rounded: FMA where the target has it, else Dekker's
// product on Veltkamp halves. Inputs must keep x * y finite.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V TwoProdLo(D d, V x, V y, V hi) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulSub(x, y, hi);
#else
  const V split = Const(d, 4097.0f, 134217729.0);  // 2^12 + 1, 2^27 + 1
  auto halves = [&](V a, V& a_hi, V& a_lo) {
    const V t = hn::Mul(split, a);
    a_hi = hn::Sub(t, hn::Sub(t, a));
    a_lo = hn::Sub(a, a_hi);
  };
  V xh, xl, yh, yl;
  halves(x, xh, xl);
  halves(y, yh, yl);
  V lo = hn::Sub(hn::Mul(xh, yh), hi);
  lo = hn::Add(lo, hn::Mul(xh, yl));
  lo = hn::Add(lo, hn::Mul(xl, yh));
  return hn::Add(lo, hn::Mul(xl, yl));
#endif
}

// exp(a) in f32 for a in [-87, 0], where the result is a normal number: no overflow, underflow,
// infinity or NaN to handle, so it is inlined and costs about a third of SLEEF's call (measured,
// docs/performance.md), within 1 ulp. Cody-Waite reduction a = q ln2 + s, |s| <= ln2 / 2, with
// ln2 in two parts (q ln2_hi is exact for |q| < 2^8), and SLEEF expf's degree-7 polynomial for
// exp(s) (its coefficients, the published minimax fit); 2^q is built in the exponent field.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V ExpNonPositiveF32(D d, V a) {
  static_assert(sizeof(hn::TFromD<D>) == 4);
  const hn::RebindToSigned<D> di;
  const V q = hn::Round(hn::Mul(a, hn::Set(d, 1.442695040888963407359924681001892137f)));
  V s = hn::MulAdd(q, hn::Set(d, -0.693145751953125f), a);
  s = hn::MulAdd(q, hn::Set(d, -1.428606765330187045e-06f), s);
  V p = hn::Set(d, 0.000198527617612853646278381f);
  p = hn::MulAdd(p, s, hn::Set(d, 0.00139304355252534151077271f));
  p = hn::MulAdd(p, s, hn::Set(d, 0.00833336077630519866943359f));
  p = hn::MulAdd(p, s, hn::Set(d, 0.0416664853692054748535156f));
  p = hn::MulAdd(p, s, hn::Set(d, 0.166666671633720397949219f));
  p = hn::MulAdd(p, s, hn::Set(d, 0.5f));
  p = hn::Add(hn::MulAdd(hn::Mul(s, s), p, s), hn::Set(d, 1.0f));  // 1 + s rounds off s's bits
  const auto biased = hn::Add(hn::ConvertTo(di, q), hn::Set(di, 127));
  return hn::Mul(p, hn::BitCast(d, hn::ShiftLeft<23>(biased)));
}

// exp(-(u + ul)^2 / 2^k) for |u| small enough that u*u is finite (callers clamp), with the
// square carried as hi + lo: exp(-(h + l)) = exp(-h) * (1 - l) to within l^2. In f32 the callers
// keep h * scale <= 64 (erfc's clamps), inside ExpNonPositiveF32's range.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V ExpNegSquare(D d, V u, V ul, V scale) {
  const V h = hn::Mul(u, u);
  const V l = hn::MulAdd(hn::Add(u, u), ul, TwoProdLo(d, u, u, h));
  const V a = hn::Neg(hn::Mul(h, scale));
  V e;
  if constexpr (sizeof(hn::TFromD<D>) == 4)
    e = ExpNonPositiveF32(d, a);
  else
    e = Exp(d, a);
  return hn::NegMulAdd(e, hn::Mul(l, scale), e);
}

// ---- erf and erfc (f32: our fits; f64: SLEEF) ----

// erf(u) / u for |u| <= 0.5 as a polynomial in u^2: weighted minimax fit, relative error
// 1.4e-9 (0.02 ulp) before rounding.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V ErfOverXSmall(D d, V u) {
  const V s = hn::Mul(u, u);
  V p = hn::Set(d, 4.717990074e-03f);
  p = hn::MulAdd(p, s, hn::Set(d, -2.675718427e-02f));
  p = hn::MulAdd(p, s, hn::Set(d, 1.128282281e-01f));
  p = hn::MulAdd(p, s, hn::Set(d, -3.761260857e-01f));
  return hn::MulAdd(p, s, hn::Set(d, 1.128379166e+00f));
}

// exp(u^2) * erfc(u) for u >= 0.5 as t * Q(t), t = 2 / (2 + u): weighted minimax fit over
// u in [0.5, 10.1] (erfc underflows f32 beyond), relative error 8.4e-9 (0.14 ulp).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V ScaledErfcLarge(D d, V u) {
  const V t = hn::Div(hn::Set(d, 2.0f), hn::Add(hn::Set(d, 2.0f), u));
  V q = hn::Set(d, -6.151465951e-02f);
  q = hn::MulAdd(q, t, hn::Set(d, 2.973799880e-01f));
  q = hn::MulAdd(q, t, hn::Set(d, -5.139334718e-01f));
  q = hn::MulAdd(q, t, hn::Set(d, 3.076345026e-01f));
  q = hn::MulAdd(q, t, hn::Set(d, -4.571596350e-02f));
  q = hn::MulAdd(q, t, hn::Set(d, 2.100772852e-01f));
  q = hn::MulAdd(q, t, hn::Set(d, 2.414269772e-01f));
  q = hn::MulAdd(q, t, hn::Set(d, 2.825792111e-01f));
  q = hn::MulAdd(q, t, hn::Set(d, 2.820762369e-01f));
  return hn::Mul(t, q);
}

// erf and erfc at u + ul >= 0 (ul: the low part of an argument that was rounded), in pieces
// so that callers form 1 - erfc, erfc, or erfc times a factor without cancellation:
//   small: u < 0.5, where erf = u * erf_over_x (and erfc = 1 - erf, at most 2x cancellation);
//   elsewhere erfc = scaled * (ev * em), ev * em = exp(-(u + ul)^2) (GELU's derivative reuses
//   it). em is 1, except in the deep tail (u >= 8) where ev = em = exp(-(u + ul)^2 / 2): a
//   subnormal exp(-u^2) has lost bits that a factor > 1 would carry into the result.
template <class D>
struct ErfcParts {
  hn::Mask<D> small;
  hn::VFromD<D> erf_over_x, scaled, ev, em;
};

template <class D, class V = hn::VFromD<D>>
HWY_INLINE ErfcParts<D> ErfcOfNonNegative(D d, V u, V ul) {
  const V one = hn::Set(d, 1.0f);
  // Beyond 10.5 erfc is 0 in f32; clamping keeps u*u and its error term finite.
  const V uc = hn::Min(u, hn::Set(d, 10.5f));
  const auto deep = hn::Ge(uc, hn::Set(d, 8.0f));
  const V ev = ExpNegSquare(d, uc, ul, hn::IfThenElse(deep, hn::Set(d, 0.5f), one));
  return {hn::Lt(u, hn::Set(d, 0.5f)), ErfOverXSmall(d, uc), ScaledErfcLarge(d, uc), ev,
          hn::IfThenElse(deep, ev, one)};
}

// erf(x): f32 within 2.5 ulp, f64 SLEEF's 1 ulp.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Erf(D d, V x) {
  if constexpr (sizeof(hn::TFromD<D>) == 8) {
    return ErfSleef(d, x);
  } else {
    const V u = hn::Abs(x);
    const ErfcParts<D> p = ErfcOfNonNegative(d, u, hn::Zero(d));
    const V large = hn::NegMulAdd(p.scaled, hn::Mul(p.ev, p.em), hn::Set(d, 1.0f));
    const V r = hn::IfThenElse(p.small, hn::Mul(u, p.erf_over_x), large);
    return hn::IfThenElse(hn::IsNaN(x), x, hn::CopySign(r, x));
  }
}

// ---- GELU, exact ----
//
// gelu(x) = x * Phi(x), Phi(x) = erfc(z) / 2 with z = -x / sqrt(2). z is carried as hi + lo:
// erfc's relative condition number is ~2 z^2, so a rounded z would cost ~200 ulp at x = -14.

template <class D>
struct NormalCdf {
  hn::VFromD<D> cdf;          // Phi(x), except where neg_large
  hn::VFromD<D> ev, em;       // exp(-x^2 / 2) = ev * em, as in ErfcParts
  hn::VFromD<D> half_scaled;  // neg_large (x < 0, |z| >= 0.5): Phi(x) = (half_scaled ev) em
  hn::Mask<D> neg_large;
};

// |x| beyond which Phi(x) is 0 or 1 in working precision, and x * phi(x) is 0.
template <class D>
HWY_INLINE hn::VFromD<D> GeluClamp(D d) {
  return Const(d, 16.0f, 40.0);
}

// 1 where x > 0, else 0 (NaN stays NaN).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V StepBeyondClamp(D d, V x) {
  const V step = hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), hn::Set(d, hn::TFromD<D>(1)));
  return hn::IfThenElse(hn::IsNaN(x), x, step);
}

template <class D, class V = hn::VFromD<D>>
HWY_INLINE NormalCdf<D> NormalCdfOf(D d, V x) {
  const V c_hi = Const(d, 0.7071067690849304f, 0.7071067811865476);
  const V c_lo = Const(d, 1.2101617485882343e-08f, -4.833646656726457e-17);
  const V half = hn::Set(d, hn::TFromD<D>(0.5));
  const V one = hn::Set(d, hn::TFromD<D>(1));
  // |x| is clamped where erfc has long underflowed (f32: 16, f64: 40), so that products stay
  // finite; x itself multiplies the results. |z| = u + ul.
  const V ax = hn::Min(hn::Abs(x), GeluClamp(d));
  const V u = hn::Mul(ax, c_hi);
  const V ul = hn::MulAdd(ax, c_lo, TwoProdLo(d, ax, c_hi, u));
  const auto neg = hn::Lt(x, hn::Zero(d));
  if constexpr (sizeof(hn::TFromD<D>) == 8) {
    // SLEEF's erfc at u, moved to u + ul by its derivative -2/sqrt(pi) exp(-u^2).
    const V uc = hn::Min(u, hn::Set(d, 27.5));  // erfc underflows f64 beyond
    const V e = ExpNegSquare(d, uc, ul, one);
    const V erfc = hn::NegMulAdd(hn::Mul(hn::Set(d, 1.1283791670955126), e), ul, ErfcSleef(d, uc));
    const V cdf = hn::Mul(half, hn::IfThenElse(neg, erfc, hn::Sub(hn::Set(d, 2.0), erfc)));
    return {cdf, e, one, hn::Zero(d), hn::FirstN(d, 0)};
  } else {
    const ErfcParts<D> p = ErfcOfNonNegative(d, u, ul);
    const V erf_u = hn::Mul(u, p.erf_over_x);
    const V half_scaled = hn::Mul(half, p.scaled);
    // Phi = 1/2 +- erf(u)/2 near 0; 1 - erfc(u)/2 for x > 0; erfc(u)/2 for x < 0.
    const V small = hn::Mul(half, hn::IfThenElse(neg, hn::Sub(one, erf_u), hn::Add(one, erf_u)));
    const V large = hn::NegMulAdd(half_scaled, hn::Mul(p.ev, p.em), one);
    return {hn::IfThenElse(p.small, small, large), p.ev, p.em, half_scaled,
            hn::AndNot(p.small, neg)};
  }
}

// x * Phi(x). In the negative tail it is ((x half_scaled) ev) em: |x half_scaled| < 0.4, so a
// subnormal result is rounded once, from normal factors.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V GeluErf(D d, V x) {
  const NormalCdf<D> n = NormalCdfOf(d, x);
  const V tail = hn::Mul(hn::Mul(hn::Mul(x, n.half_scaled), n.ev), n.em);
  const V r = hn::IfThenElse(n.neg_large, tail, hn::Mul(x, n.cdf));
  // Beyond the clamp Phi is 0 or 1 to working precision: x * 0 (so -inf gives NaN, as ATen's
  // formula) or x. NaN stays.
  const V step = StepBeyondClamp(d, x);
  return hn::IfThenElse(hn::Gt(hn::Abs(x), GeluClamp(d)), hn::Mul(x, step), r);
}

// d/dx gelu = Phi(x) + x phi(x), phi(x) = exp(-x^2/2) / sqrt(2 pi). It crosses 0 at
// x = -0.7518, where the two terms cancel. NaN at +-inf, as the formula (and ATen) gives.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V GeluErfDerivative(D d, V x) {
  const NormalCdf<D> n = NormalCdfOf(d, x);
  const V x_pdf_scale = hn::Mul(x, Const(d, 0.3989422917366028f, 0.3989422804014327));
  const V tail = hn::Mul(hn::Mul(hn::Add(n.half_scaled, x_pdf_scale), n.ev), n.em);
  const V r =
      hn::IfThenElse(n.neg_large, tail, hn::MulAdd(x_pdf_scale, hn::Mul(n.ev, n.em), n.cdf));
  // Beyond the clamp the derivative is the step 0 or 1; NaN at +-inf, as the formula gives.
  const V beyond = hn::IfThenElse(hn::IsFinite(x), StepBeyondClamp(d, x), hn::Sub(x, x));
  return hn::IfThenElse(hn::Gt(hn::Abs(x), GeluClamp(d)), beyond, r);
}

// ---- the logistic function ----
//
// For w = wh + wl: e = exp(-|w|) = v * m and q = 1 / (1 + e), so that
//   sigma(w)           = w >= 0 ? q : (v q) m,
//   x sigma(w), w < 0  = ((x v) q) m,
//   sigma (1 - sigma)  = (v q) (m q).
// Where e is far from subnormal, v = e and m = 1. In the deep tail (|w| >= 64 in f32) v = m =
// exp(-|w|/2): a subnormal e has lost bits, and x * e would carry that loss into a larger
// result. Nothing overflows (v, m <= 1).
template <class D>
struct Logistic {
  hn::VFromD<D> q, v, m;
  hn::Mask<D> neg;  // w < 0
};

template <class D, class V = hn::VFromD<D>>
HWY_INLINE Logistic<D> LogisticOf(D d, V wh, V wl) {
  using T = hn::TFromD<D>;
  const auto neg = hn::Lt(wh, hn::Zero(d));
  const V one = hn::Set(d, T(1));
  const V half = hn::Set(d, T(0.5));
  const V aw = hn::Abs(wh);
  const auto tail = hn::Ge(aw, Const(d, 64.0f, 512.0));
  const V scale = hn::IfThenElse(tail, half, one);
  // -|w| * scale = -(|wh| + sign(wh) wl) * scale; exp(-(a + b)) = exp(-a) (1 - b).
  const V b = hn::Mul(scale, hn::IfThenElse(neg, hn::Neg(wl), wl));
  const V e_a = Exp(d, hn::Neg(hn::Mul(scale, aw)));
  const V v = hn::NegMulAdd(e_a, b, e_a);
  const V m = hn::IfThenElse(tail, v, one);
  const V q = hn::Div(one, hn::MulAdd(v, m, one));
  return {q, v, m, neg};
}

// x * sigma(w), with the small side formed last.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V TimesSigma(const Logistic<D>& l, V x) {
  return hn::IfThenElse(l.neg, hn::Mul(hn::Mul(hn::Mul(x, l.v), l.q), l.m), hn::Mul(x, l.q));
}

template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Sigmoid(D d, V x) {
  const Logistic<D> l = LogisticOf(d, x, hn::Zero(d));
  return hn::IfThenElse(hn::IsNaN(x), x, TimesSigma(l, hn::Set(d, hn::TFromD<D>(1))));
}

// sigma(w) + s sigma(w) (1 - sigma(w)) for a finite scale s (x w' of GELU-tanh, x of SiLU).
// NaN at x = +-inf, as the formula (and ATen) gives; NaN in, NaN out.
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V SigmaPlusScaledDerivative(D d, const Logistic<D>& l, V x, V s) {
  // w >= 0: q + s (v q) (m q).  w < 0: sigma = (v q) m, so the sum is ((q (1 + s q)) v) m.
  const V pos = hn::MulAdd(hn::Mul(s, hn::Mul(l.v, l.q)), hn::Mul(l.m, l.q), l.q);
  const V neg =
      hn::Mul(hn::Mul(hn::Mul(l.q, hn::MulAdd(s, l.q, hn::Set(d, hn::TFromD<D>(1)))), l.v), l.m);
  const V r = hn::IfThenElse(l.neg, neg, pos);
  return hn::IfThenElse(hn::IsFinite(x), r, hn::Sub(x, x));
}

// ---- GELU, tanh approximation ----
//
// gelu_tanh(x) = x/2 (1 + tanh(k (x + 0.044715 x^3))) = x sigma(w), w = x (a + b x^2) with
// a = 2k, b = 2k * 0.044715, k = sqrt(2/pi). sigma's relative condition number is |w|, up to
// ~100 before it underflows, so w is carried as hi + lo, constants included.
template <class D>
struct GeluTanhArg {
  hn::VFromD<D> wh, wl;
  hn::VFromD<D> dw;  // dw/dx = a + 3 b x^2
  hn::VFromD<D> xc;  // x clamped to where sigma(w) saturates
};

template <class D, class V = hn::VFromD<D>>
HWY_INLINE GeluTanhArg<D> GeluTanhArgOf(D d, V x) {
  const V a_hi = Const(d, 1.5957691669464111f, 1.5957691216057308);
  const V a_lo = Const(d, -4.534068054340423e-08f, -9.96930880911092e-17);
  const V b_hi = Const(d, 0.07135481387376785f, 0.07135481627260025);
  const V b_lo = Const(d, 2.3988324659995897e-09f, -6.175149918155315e-19);
  // Beyond |x| = 20 (f32) or 40 (f64) sigma(w) has saturated to 1 or underflowed to 0; the
  // clamp keeps x^3 finite.
  const V x_max = Const(d, 20.0f, 40.0);
  const V xc = hn::Clamp(x, hn::Neg(x_max), x_max);
  const V s_hi = hn::Mul(xc, xc);
  const V s_lo = TwoProdLo(d, xc, xc, s_hi);
  // m = b * x^2 as hi + lo.
  const V m_hi = hn::Mul(b_hi, s_hi);
  const V m_lo = hn::MulAdd(b_hi, s_lo, hn::MulAdd(b_lo, s_hi, TwoProdLo(d, b_hi, s_hi, m_hi)));
  // p = a + m as hi + lo (Knuth's two-sum: either may be the larger).
  const V p_hi = hn::Add(a_hi, m_hi);
  const V bv = hn::Sub(p_hi, a_hi);
  const V two_sum_lo = hn::Add(hn::Sub(a_hi, hn::Sub(p_hi, bv)), hn::Sub(m_hi, bv));
  const V p_lo = hn::Add(two_sum_lo, hn::Add(a_lo, m_lo));
  // w = x * p.
  const V w_hi = hn::Mul(xc, p_hi);
  const V w_lo = hn::MulAdd(xc, p_lo, TwoProdLo(d, xc, p_hi, w_hi));
  const V dw = hn::MulAdd(hn::Mul(hn::Set(d, hn::TFromD<D>(3)), b_hi), s_hi, a_hi);
  return {w_hi, w_lo, dw, xc};
}

template <class D, class V = hn::VFromD<D>>
HWY_INLINE V GeluTanh(D d, V x) {
  const GeluTanhArg<D> w = GeluTanhArgOf(d, x);
  const V r = TimesSigma(LogisticOf(d, w.wh, w.wl), x);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

// d/dx x sigma(w) = sigma(w) + x w' sigma(w) (1 - sigma(w)).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V GeluTanhDerivative(D d, V x) {
  const GeluTanhArg<D> w = GeluTanhArgOf(d, x);
  const Logistic<D> l = LogisticOf(d, w.wh, w.wl);
  // The clamped x keeps x w' finite; past the clamp sigma (1 - sigma) is 0.
  return SigmaPlusScaledDerivative(d, l, x, hn::Mul(w.xc, w.dw));
}

// ---- SiLU ----

// silu(x) = x sigma(x).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V Silu(D d, V x) {
  return TimesSigma(LogisticOf(d, x, hn::Zero(d)), x);
}

// d/dx x sigma(x) = sigma(x) + x sigma(x) (1 - sigma(x)).
template <class D, class V = hn::VFromD<D>>
HWY_INLINE V SiluDerivative(D d, V x) {
  const Logistic<D> l = LogisticOf(d, x, hn::Zero(d));
  // Past |x| = 128 (f32) sigma (1 - sigma) has underflowed; the clamp keeps x * 0 from NaN.
  const V x_max = Const(d, 128.0f, 1024.0);
  return SigmaPlusScaledDerivative(d, l, x, hn::Clamp(x, hn::Neg(x_max), x_max));
}

// y = exp(x - shift) over n elements; returns the sum of y, accumulated lane-wise in T.
template <class D, typename T = hn::TFromD<D>>
HWY_INLINE T ExpShiftSum(D d, const T* x, T shift, T* y, size_t n) {
  const size_t lanes = hn::Lanes(d);
  const auto s = hn::Set(d, shift);
  auto sum = hn::Zero(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto e = Exp(d, hn::Sub(hn::LoadU(d, x + i), s));
    hn::StoreU(e, d, y + i);
    sum = hn::Add(sum, e);
  }
  T total = hn::GetLane(hn::SumOfLanes(d, sum));
  for (; i < n; ++i) {
    const auto e = Exp(d, hn::Sub(hn::Set(d, x[i]), s));
    y[i] = hn::GetLane(e);
    total += y[i];
  }
  return total;
}

}  // namespace aotgrad::kernels::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // include guard toggle
