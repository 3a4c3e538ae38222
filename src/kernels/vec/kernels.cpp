// The kernels of vec.h, compiled once per Highway target (hwy/foreach_target.h re-includes this
// file with HWY_TARGET set to each ISA in turn); see vec.h for the reading guide.
//
// Each target's pass defines loops (MapUnary, MapBinary), the element formulas (ApplyUnary,
// ApplyBinary) and GetTarget(), which fills that target's tables. The HWY_ONCE part at the end
// is compiled once: active() asks Highway's dispatcher for the best target, supported() lists
// each compiled target's tables for tests and benches.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vec/kernels.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

#include "kernels/vec/math-inl.h"
#include "kernels/vec/vec.h"

HWY_BEFORE_NAMESPACE();
namespace aotgrad::kernels::vec::HWY_NAMESPACE {

// y[i] = f(x[i]). The tail goes through a stack buffer: no lane reads or writes past the arrays
// (a masked store on SSE4 would rewrite bytes another thread may own).
template <class D, typename T, class F>
HWY_INLINE void MapUnary(D d, const T* x, T* y, size_t n, const F& f) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T buf[hn::MaxLanes(d)] = {};
    std::copy(x + i, x + n, buf);
    hn::Store(f(hn::Load(d, buf)), d, buf);
    std::copy(buf, buf + (n - i), y + i);
  }
}

// y[i] = f(a[i], b[i]); the operand named by B is the single value a[0] or b[0].
template <Broadcast B, class D, typename T, class F>
HWY_INLINE void MapBinary(D d, const T* a, const T* b, T* y, size_t n, const F& f) {
  using V = hn::VFromD<D>;
  const size_t lanes = hn::Lanes(d);
  const V a_one = hn::Set(d, B == Broadcast::a ? a[0] : T(0));
  const V b_one = hn::Set(d, B == Broadcast::b ? b[0] : T(0));
  auto load_a = [&](const T* p) { return B == Broadcast::a ? a_one : hn::LoadU(d, p); };
  auto load_b = [&](const T* p) { return B == Broadcast::b ? b_one : hn::LoadU(d, p); };
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(load_a(a + i), load_b(b + i)), d, y + i);
  if (i < n) {
    HWY_ALIGN T a_buf[hn::MaxLanes(d)] = {};
    HWY_ALIGN T b_buf[hn::MaxLanes(d)] = {};
    if (B != Broadcast::a) std::copy(a + i, a + n, a_buf);
    if (B != Broadcast::b) std::copy(b + i, b + n, b_buf);
    hn::Store(f(load_a(a_buf), load_b(b_buf)), d, a_buf);
    std::copy(a_buf, a_buf + (n - i), y + i);
  }
}

template <UnaryFn F, class D, class V = hn::VFromD<D>>
HWY_INLINE V ApplyUnary(D d, V x) {
  using T = hn::TFromD<D>;
  if constexpr (F == UnaryFn::neg) return hn::Neg(x);
  // x < 0 rather than x > 0, so NaN and -0 pass through like ATen's clamp_min(x, 0).
  if constexpr (F == UnaryFn::relu) return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(d)), x);
  if constexpr (F == UnaryFn::exp) return Exp(d, x);
  if constexpr (F == UnaryFn::log) return Log(d, x);
  if constexpr (F == UnaryFn::sqrt) return hn::Sqrt(x);
  if constexpr (F == UnaryFn::rsqrt) return hn::Div(hn::Set(d, T(1)), hn::Sqrt(x));
  if constexpr (F == UnaryFn::sin) return Sin(d, x);
  if constexpr (F == UnaryFn::cos) return Cos(d, x);
  if constexpr (F == UnaryFn::tanh) return Tanh(d, x);
  if constexpr (F == UnaryFn::sigmoid) return Sigmoid(d, x);
  if constexpr (F == UnaryFn::erf) return Erf(d, x);
  if constexpr (F == UnaryFn::gelu_erf) return GeluErf(d, x);
  if constexpr (F == UnaryFn::gelu_tanh) return GeluTanh(d, x);
  if constexpr (F == UnaryFn::silu) return Silu(d, x);
}

// x^p. The exponents ATen special-cases take the same exact forms (so x^2 is x * x on every
// target); the rest is SLEEF's pow, which keeps C's special cases (negative bases with integral
// exponents, 0^negative = inf, ...).
template <typename T>
void PowKernel(const T* x, T* y, int64_t n, T p) {
  const hn::ScalableTag<T> d;
  using V = hn::VFromD<decltype(d)>;
  const size_t len = static_cast<size_t>(n);
  const V one = hn::Set(d, T(1));
  if (p == T(1))
    MapUnary(d, x, y, len, [](V v) { return v; });
  else if (p == T(2))
    MapUnary(d, x, y, len, [](V v) { return hn::Mul(v, v); });
  else if (p == T(3))
    MapUnary(d, x, y, len, [](V v) { return hn::Mul(hn::Mul(v, v), v); });
  else if (p == T(0.5))
    MapUnary(d, x, y, len, [](V v) { return hn::Sqrt(v); });
  else if (p == T(-0.5))
    MapUnary(d, x, y, len, [&](V v) { return hn::Div(one, hn::Sqrt(v)); });
  else if (p == T(-1))
    MapUnary(d, x, y, len, [&](V v) { return hn::Div(one, v); });
  else if (p == T(-2))
    MapUnary(d, x, y, len, [&](V v) { return hn::Div(one, hn::Mul(v, v)); });
  else
    MapUnary(d, x, y, len, [&](V v) { return Pow(d, v, hn::Set(d, p)); });
}

template <UnaryFn F, typename T>
void UnaryKernelOf(const T* x, T* y, int64_t n, T p) {
  if constexpr (F == UnaryFn::pow) {
    PowKernel(x, y, n, p);
  } else {
    const hn::ScalableTag<T> d;
    MapUnary(d, x, y, static_cast<size_t>(n), [&](auto v) { return ApplyUnary<F>(d, v); });
  }
}

template <BinaryFn F, class D, class V = hn::VFromD<D>>
HWY_INLINE V ApplyBinary(D d, V a, V b, V p) {
  using T = hn::TFromD<D>;
  const V one = hn::Set(d, T(1));
  // p * b is exact when p == 1, so alpha = 1 rounds once, like a + b.
  if constexpr (F == BinaryFn::add) return hn::Add(a, hn::Mul(p, b));
  if constexpr (F == BinaryFn::sub) return hn::Sub(a, hn::Mul(p, b));
  if constexpr (F == BinaryFn::mul) return hn::Mul(a, b);
  if constexpr (F == BinaryFn::div) return hn::Div(a, b);
  // (1 - y)(1 + y), not 1 - y^2: exact to 1.5 ulp where tanh saturates and 1 - y^2 cancels.
  if constexpr (F == BinaryFn::tanh_backward)
    return hn::Mul(a, hn::Mul(hn::Sub(one, b), hn::Add(one, b)));
  if constexpr (F == BinaryFn::sigmoid_backward) return hn::Mul(hn::Mul(a, hn::Sub(one, b)), b);
  // NaN in b fails b <= p and passes the gradient, as ATen's kernel does.
  if constexpr (F == BinaryFn::threshold_backward) return hn::IfThenZeroElse(hn::Le(b, p), a);
  if constexpr (F == BinaryFn::gelu_erf_backward) return hn::Mul(a, GeluErfDerivative(d, b));
  if constexpr (F == BinaryFn::gelu_tanh_backward) return hn::Mul(a, GeluTanhDerivative(d, b));
  if constexpr (F == BinaryFn::silu_backward) return hn::Mul(a, SiluDerivative(d, b));
}

template <BinaryFn F, Broadcast B, typename T>
void BinaryKernelOf(const T* a, const T* b, T* y, int64_t n, T p) {
  const hn::ScalableTag<T> d;
  const auto vp = hn::Set(d, p);
  MapBinary<B>(d, a, b, y, static_cast<size_t>(n),
               [&](auto va, auto vb) { return ApplyBinary<F>(d, va, vb, vp); });
}

template <typename T>
T ExpShiftSumKernel(const T* x, T shift, T* y, int64_t n) {
  return ExpShiftSum(hn::ScalableTag<T>(), x, shift, y, static_cast<size_t>(n));
}

template <typename T, size_t... U, size_t... B>
Kernels<T> MakeKernels(std::index_sequence<U...>, std::index_sequence<B...>) {
  Kernels<T> k{};
  ((k.unary[U] = &UnaryKernelOf<static_cast<UnaryFn>(U), T>), ...);
  ((k.binary[B][0] = &BinaryKernelOf<static_cast<BinaryFn>(B), Broadcast::none, T>), ...);
  ((k.binary[B][1] = &BinaryKernelOf<static_cast<BinaryFn>(B), Broadcast::a, T>), ...);
  ((k.binary[B][2] = &BinaryKernelOf<static_cast<BinaryFn>(B), Broadcast::b, T>), ...);
  k.exp_shift_sum = &ExpShiftSumKernel<T>;
  return k;
}

template <typename T>
Kernels<T> MakeKernels() {
  return MakeKernels<T>(std::make_index_sequence<static_cast<size_t>(UnaryFn::kCount)>(),
                        std::make_index_sequence<static_cast<size_t>(BinaryFn::kCount)>());
}

const Target* GetTarget() {
  static const Target target{hwy::TargetName(HWY_TARGET), HWY_TARGET, MakeKernels<float>(),
                             MakeKernels<double>()};
  return &target;
}

}  // namespace aotgrad::kernels::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace aotgrad::kernels::vec {

HWY_EXPORT(GetTarget);

const Target& active() {
  static const Target* const target = HWY_DYNAMIC_DISPATCH(GetTarget)();
  return *target;
}

std::span<const Target* const> supported() {
  struct Compiled {
    int64_t bit;
    const Target* (*get)();
  };
  // Best first, as Highway orders its targets.
  static const Compiled kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::GetTarget},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::GetTarget},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::GetTarget},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::GetTarget},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::GetTarget},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::GetTarget},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::GetTarget},
#endif
  };
  static const std::vector<const Target*> list = [] {
    std::vector<const Target*> v;
    const int64_t cpu = hwy::SupportedTargets() | HWY_EMU128 | HWY_SCALAR;
    for (const Compiled& c : kCompiled)
      if (cpu & c.bit) v.push_back(c.get());
    return v;
  }();
  return list;
}

}  // namespace aotgrad::kernels::vec
#endif  // HWY_ONCE
