// ULP bounds of the vector kernels (src/kernels/vec/), checked against a long double reference
// on every ISA target this CPU runs, the portable fallback included.
//
// Inputs cover each function's domain: every sign and binade (a stride through the bit
// patterns, subnormals included), a dense grid over [-30, 30] where the functions bend, and
// the edge cases: +-0, the smallest subnormal, FLT_MIN, +-inf, NaN, the largest finite value,
// tanh/sigmoid saturation, GELU's far negative tail.
//
// Error is |got - ref| in units of the ulp of the reference (the ulp of the smallest subnormal
// below FLT_MIN); a result that is inf or NaN must be exactly what the reference rounds to. The
// backward formulas of GELU cross zero (gelu' at x = -0.7518), where no formula keeps a relative
// bound: their error is measured against the magnitude of the larger term instead (`scale`).
// The bounds below are the ones docs/performance.md states.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "kernels/vec/sleef_bridge.h"
#include "kernels/vec/vec.h"

namespace aotgrad::kernels::vec {
namespace {

using L = long double;

constexpr L kSqrt1_2 = 0.707106781186547524400844362104849039L;
constexpr L kSqrt2OverPi = 0.797884560802865355879892119868763737L;
constexpr L kInvSqrt2Pi = 0.398942280401432677939946059934381868L;
constexpr L kKappa = 0.044715L;

template <typename T>
std::vector<T> special_values() {
  using lim = std::numeric_limits<T>;
  std::vector<T> v = {T(0),
                      T(1),
                      T(0.5),
                      T(2),
                      T(0.75),
                      T(3),
                      lim::denorm_min(),
                      lim::min(),
                      lim::min() / 2,
                      lim::max(),
                      lim::infinity(),
                      lim::quiet_NaN(),
                      lim::epsilon(),
                      T(1e-30),
                      T(88.5),
                      T(89),
                      T(104),
                      T(710),
                      T(745),
                      T(20),
                      T(9.5),
                      T(10.05),
                      T(14),
                      T(27)};
  const size_t n = v.size();
  for (size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

// Specials, a stride through the bit patterns of [lo, hi], and a dense grid of the middle.
template <typename T>
std::vector<T> inputs(double lo, double hi) {
  std::vector<T> v;
  for (T x : special_values<T>())
    if (std::isnan(x) || (x >= T(lo) && x <= T(hi))) v.push_back(x);
  if constexpr (sizeof(T) == 4) {
    for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 16411) {
      uint32_t b = static_cast<uint32_t>(bits);
      float x;
      std::memcpy(&x, &b, 4);
      if (x >= T(lo) && x <= T(hi)) v.push_back(x);
    }
  } else {
    // Every binade, 24 mantissas each, both signs.
    for (int e = -1074; e <= 1023; e += 2)
      for (int m = 0; m < 24; ++m)
        for (T s : {T(1), T(-1)}) {
          T x = s * std::ldexp(T(1) + T(m) / 24 + T(0.0123), e);
          if (x >= T(lo) && x <= T(hi)) v.push_back(x);
        }
  }
  const double g_lo = std::max(lo, -30.0), g_hi = std::min(hi, 30.0);
  for (int i = 0; i <= 60000; ++i) v.push_back(T(g_lo + (g_hi - g_lo) * i / 60000.0));
  return v;
}

template <typename T>
L ulp_at(L v) {
  v = std::fabs(v);
  if (v < L(std::numeric_limits<T>::min())) return L(std::numeric_limits<T>::denorm_min());
  int e;
  std::frexp(v, &e);
  return std::ldexp(L(1), e - std::numeric_limits<T>::digits);
}

// Error of `got` in ulps of `ref` (or of `scale`, when larger); infinite when the two disagree
// on inf or NaN.
template <typename T>
L ulp_error(T got, L ref, L scale) {
  const T rounded = static_cast<T>(ref);
  if (std::isnan(rounded) || std::isnan(got))
    return std::isnan(rounded) && std::isnan(got) ? 0 : INFINITY;
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : INFINITY;
  return std::fabs(L(got) - ref) / ulp_at<T>(std::max(std::fabs(ref), scale));
}

struct Worst {
  L ulp = 0;
  L x = 0, y = 0;
  L got = 0, ref = 0;
  void add(L e, L xv, L yv, L g, L r) {
    if (e > ulp || std::isnan(e)) *this = {e, xv, yv, g, r};
  }
  std::string str() const {
    char buf[200];
    std::snprintf(buf, sizeof buf, "max %.3Lg ulp at x=%.9Lg y=%.9Lg: got %.12Lg, want %.12Lg", ulp,
                  x, y, got, ref);
    return buf;
  }
};

// ---- unary ----

L sigmoid_ref(L x) {
  return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x));
}
L gelu_erf_ref(L x) {
  return x * std::erfc(-x * kSqrt1_2) / 2;
}
L gelu_tanh_ref(L x) {
  // x * sigmoid(2u): 1 + tanh(u) cancels for negative u, even in long double.
  return x * sigmoid_ref(2 * kSqrt2OverPi * (x + kKappa * x * x * x));
}

struct UnaryCase {
  UnaryFn fn;
  const char* name;
  L p;
  L (*ref)(L x, L p);
  double lo, hi;
  double bound_f32, bound_f64;
};

const UnaryCase kUnary[] = {
    {UnaryFn::neg, "neg", 0, [](L x, L) { return -x; }, -INFINITY, INFINITY, 0, 0},
    {UnaryFn::relu, "relu", 0, [](L x, L) { return x < 0 ? L(0) : x; }, -INFINITY, INFINITY, 0, 0},
    {UnaryFn::exp, "exp", 0, [](L x, L) { return std::exp(x); }, -INFINITY, INFINITY, 1, 1},
    {UnaryFn::log, "log", 0, [](L x, L) { return std::log(x); }, -INFINITY, INFINITY, 1, 1},
    {UnaryFn::sqrt, "sqrt", 0, [](L x, L) { return std::sqrt(x); }, -INFINITY, INFINITY, 0.5, 0.5},
    {UnaryFn::rsqrt, "rsqrt", 0, [](L x, L) { return 1 / std::sqrt(x); }, -INFINITY, INFINITY, 1.5,
     1.5},
    {UnaryFn::sin, "sin", 0, [](L x, L) { return std::sin(x); }, -1e4, 1e4, 3.5, 3.5},
    {UnaryFn::cos, "cos", 0, [](L x, L) { return std::cos(x); }, -1e4, 1e4, 3.5, 3.5},
    {UnaryFn::tanh, "tanh", 0, [](L x, L) { return std::tanh(x); }, -INFINITY, INFINITY, 3.5, 3.5},
    {UnaryFn::sigmoid, "sigmoid", 0, [](L x, L) { return sigmoid_ref(x); }, -INFINITY, INFINITY, 3,
     3},
    {UnaryFn::erf, "erf", 0, [](L x, L) { return std::erf(x); }, -INFINITY, INFINITY, 2.5, 1.5},
    {UnaryFn::gelu_erf, "gelu_erf", 0, [](L x, L) { return gelu_erf_ref(x); }, -INFINITY, INFINITY,
     5.5, 3},
    {UnaryFn::gelu_tanh, "gelu_tanh", 0, [](L x, L) { return gelu_tanh_ref(x); }, -INFINITY,
     INFINITY, 3.5, 4},
    {UnaryFn::silu, "silu", 0, [](L x, L) { return x * sigmoid_ref(x); }, -INFINITY, INFINITY, 3,
     3.5},
    {UnaryFn::pow, "pow(x, 2)", 2, [](L x, L) { return x * x; }, -INFINITY, INFINITY, 0.5, 0.5},
    {UnaryFn::pow, "pow(x, 3)", 3, [](L x, L) { return x * x * x; }, -INFINITY, INFINITY, 1.5, 1.5},
    {UnaryFn::pow, "pow(x, -1)", -1, [](L x, L) { return 1 / x; }, -INFINITY, INFINITY, 0.5, 0.5},
    {UnaryFn::pow, "pow(x, 0.5)", 0.5, [](L x, L) { return std::sqrt(x); }, -INFINITY, INFINITY,
     0.5, 0.5},
    {UnaryFn::pow, "pow(x, 1.7)", 1.7, [](L x, L p) { return std::pow(x, p); }, -INFINITY, INFINITY,
     1, 1},
    {UnaryFn::pow, "pow(x, -3)", -3, [](L x, L p) { return std::pow(x, p); }, -INFINITY, INFINITY,
     1, 1},
};

// AOTGRAD_ULP_REPORT=1 prints each op's worst error per target (the table of the docs).
void report(const char* name, size_t bytes, const Target& t, const Worst& w) {
  if (std::getenv("AOTGRAD_ULP_REPORT"))
    std::printf("ulp %-20s %s %-7s %.3Lg\n", name, bytes == 4 ? "f32" : "f64", t.name, w.ulp);
}

template <typename T>
Worst check_unary(const Kernels<T>& k, const UnaryCase& c, const std::vector<T>& x,
                  const std::vector<L>& ref) {
  std::vector<T> y(x.size());
  k[c.fn](x.data(), y.data(), static_cast<int64_t>(x.size()), static_cast<T>(c.p));
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) w.add(ulp_error<T>(y[i], ref[i], 0), x[i], 0, y[i], ref[i]);
  return w;
}

template <typename T>
void check_all_unary() {
  for (const UnaryCase& c : kUnary) {
    // p as the kernel sees it, so pow's reference uses the same exponent.
    const L p = static_cast<L>(static_cast<T>(c.p));
    const std::vector<T> x = inputs<T>(c.lo, c.hi);
    std::vector<L> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) ref[i] = c.ref(x[i], p);
    const double bound = sizeof(T) == 4 ? c.bound_f32 : c.bound_f64;
    for (const Target* t : supported()) {
      Worst w = check_unary(t->of<T>(), c, x, ref);
      report(c.name, sizeof(T), *t, w);
      EXPECT_LE(w.ulp, bound) << c.name << (sizeof(T) == 4 ? " f32" : " f64") << " on " << t->name
                              << ": " << w.str();
    }
  }
}

// The dispatcher's choice is the best target tested here, and the portable one is tested too.
TEST(VecUlp, ActiveTargetIsTheBestSupported) {
  ASSERT_GE(supported().size(), 2u);
  EXPECT_EQ(&active(), supported().front()) << active().name;
  // Highway's portable target: SCALAR under GCC 12 (where it deems EMU128 miscompiled), EMU128
  // under clang. Both are plain C++ lanes.
  const std::string fallback = supported().back()->name;
  EXPECT_TRUE(fallback == "SCALAR" || fallback == "EMU128") << fallback;
}

// The bridges to SLEEF's AVX entry points (vec/sleef_bridge.h: clang's kernels call them) give
// the same bits as the kernels of the same target: under GCC those call SLEEF directly.
template <typename T>
void check_bridges(const Target& t, void (*const unary[])(const T*, T*),
                   void (*pow)(const T*, const T*, T*), size_t lanes) {
  const UnaryFn fns[] = {UnaryFn::exp, UnaryFn::log, UnaryFn::tanh, UnaryFn::sin, UnaryFn::cos};
  std::vector<T> x = inputs<T>(-100, 100);
  x.resize(x.size() / lanes * lanes);
  std::vector<T> want(x.size()), got(x.size());
  for (size_t f = 0; f < std::size(fns); ++f) {
    t.of<T>()[fns[f]](x.data(), want.data(), static_cast<int64_t>(x.size()), T(0));
    for (size_t i = 0; i < x.size(); i += lanes) unary[f](x.data() + i, got.data() + i);
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), x.size() * sizeof(T)))
        << t.name << " fn " << f << " size " << sizeof(T);
  }
  const std::vector<T> p(lanes, T(1.7));
  t.of<T>()[UnaryFn::pow](x.data(), want.data(), static_cast<int64_t>(x.size()), T(1.7));
  for (size_t i = 0; i < x.size(); i += lanes) pow(x.data() + i, p.data(), got.data() + i);
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), x.size() * sizeof(T))) << t.name << " pow";
}

TEST(VecUlp, SleefBridgesGiveTheKernelsBits) {
  namespace b = sleef_bridge;
  int checked = 0;
  for (const Target* t : supported()) {
    if (std::string(t->name) == "AVX3") {
      void (*const f32[])(const float*, float*) = {b::avx512::exp_f32, b::avx512::log_f32,
                                                   b::avx512::tanh_f32, b::avx512::sin_f32,
                                                   b::avx512::cos_f32};
      void (*const f64[])(const double*, double*) = {b::avx512::exp_f64, b::avx512::log_f64,
                                                     b::avx512::tanh_f64, b::avx512::sin_f64,
                                                     b::avx512::cos_f64};
      check_bridges<float>(*t, f32, b::avx512::pow_f32, 16);
      check_bridges<double>(*t, f64, b::avx512::pow_f64, 8);
      ++checked;
    } else if (std::string(t->name) == "AVX2") {
      void (*const f32[])(const float*, float*) = {b::avx2::exp_f32, b::avx2::log_f32,
                                                   b::avx2::tanh_f32, b::avx2::sin_f32,
                                                   b::avx2::cos_f32};
      void (*const f64[])(const double*, double*) = {b::avx2::exp_f64, b::avx2::log_f64,
                                                     b::avx2::tanh_f64, b::avx2::sin_f64,
                                                     b::avx2::cos_f64};
      check_bridges<float>(*t, f32, b::avx2::pow_f32, 8);
      check_bridges<double>(*t, f64, b::avx2::pow_f64, 4);
      ++checked;
    }
  }
  if (checked == 0) GTEST_SKIP() << "this CPU has neither AVX2 nor AVX-512";
}

TEST(VecUlp, UnaryF32) {
  check_all_unary<float>();
}
TEST(VecUlp, UnaryF64) {
  check_all_unary<double>();
}

// ---- binary ----

struct BinaryRef {
  L value;
  L scale;  // ulps are measured against max(|value|, scale)
};

// d/dx gelu_erf = Phi(x) + x phi(x); the scale is the larger term.
BinaryRef gelu_erf_backward_ref(L g, L x) {
  const L cdf = std::erfc(-x * kSqrt1_2) / 2, x_pdf = x * kInvSqrt2Pi * std::exp(-x * x / 2);
  return {g * (cdf + x_pdf), std::fabs(g) * std::max(std::fabs(cdf), std::fabs(x_pdf))};
}

// d/dx x sigma(w) = sigma + x w' sigma (1 - sigma), w = 2 k (x + kappa x^3).
BinaryRef gelu_tanh_backward_ref(L g, L x) {
  const L w = 2 * kSqrt2OverPi * (x + kKappa * x * x * x);
  const L dw = 2 * kSqrt2OverPi * (1 + 3 * kKappa * x * x);
  const L s = sigmoid_ref(w), one_minus_s = sigmoid_ref(-w);
  const L term = x * dw * s * one_minus_s;
  return {g * (s + term), std::fabs(g) * std::max(std::fabs(s), std::fabs(term))};
}

// d/dx x sigma(x) = sigma + x sigma (1 - sigma); the scale is the larger term.
BinaryRef silu_backward_ref(L g, L x) {
  const L s = sigmoid_ref(x), term = x * s * sigmoid_ref(-x);
  return {g * (s + term), std::fabs(g) * std::max(std::fabs(s), std::fabs(term))};
}

// The kernel's own rounding of an intermediate, to the precision under test.
L (*rounded)(L) = nullptr;

struct BinaryCase {
  BinaryFn fn;
  const char* name;
  L p;
  BinaryRef (*ref)(L a, L b, L p);
  bool a_is_grad;  // a takes a few gradient values; b sweeps the domain
  double bound_f32, bound_f64;
  double b_lo = -INFINITY, b_hi = INFINITY;  // tanh's and sigmoid's outputs lie in [-1, 1]
};

const BinaryCase kBinary[] = {
    {BinaryFn::add, "add", 1,
     [](L a, L b, L) {
       return BinaryRef{a + b, 0};
     },
     false, 0.5, 0.5},
    // a + p b rounds p b first; under cancellation that error is relative to the operands.
    // a + p b rounds p b first, on every target (no fused multiply-add).
    {BinaryFn::add, "add(alpha=2.5)", 2.5,
     [](L a, L b, L p) {
       return BinaryRef{a + rounded(p * b), 0};
     },
     false, 0.5, 0.5},
    {BinaryFn::sub, "sub", 1,
     [](L a, L b, L) {
       return BinaryRef{a - b, 0};
     },
     false, 0.5, 0.5},
    {BinaryFn::sub, "sub(alpha=-3)", -3,
     [](L a, L b, L p) {
       return BinaryRef{a - rounded(p * b), 0};
     },
     false, 0.5, 0.5},
    {BinaryFn::mul, "mul", 0,
     [](L a, L b, L) {
       return BinaryRef{a * b, 0};
     },
     false, 0.5, 0.5},
    {BinaryFn::div, "div", 0,
     [](L a, L b, L) {
       return BinaryRef{a / b, 0};
     },
     false, 0.5, 0.5},
    {BinaryFn::tanh_backward, "tanh_backward", 0,
     [](L g, L y, L) {
       return BinaryRef{g * (1 - y * y), 0};
     },
     true, 2.5, 2.5, -2, 2},
    {BinaryFn::sigmoid_backward, "sigmoid_backward", 0,
     [](L g, L y, L) {
       return BinaryRef{g * (1 - y) * y, 0};
     },
     true, 2.5, 2.5, -2, 2},
    {BinaryFn::threshold_backward, "threshold_backward", 0.25,
     [](L g, L x, L p) {
       return BinaryRef{x <= p ? 0 : g, 0};
     },
     true, 0, 0},
    {BinaryFn::gelu_erf_backward, "gelu_erf_backward", 0,
     [](L g, L x, L) { return gelu_erf_backward_ref(g, x); }, true, 5, 4},
    {BinaryFn::gelu_tanh_backward, "gelu_tanh_backward", 0,
     [](L g, L x, L) { return gelu_tanh_backward_ref(g, x); }, true, 6, 6.5},
    {BinaryFn::silu_backward, "silu_backward", 0,
     [](L g, L x, L) { return silu_backward_ref(g, x); }, true, 5, 5},
};

template <typename T>
void binary_inputs(const BinaryCase& c, std::vector<T>& a, std::vector<T>& b) {
  b = inputs<T>(c.b_lo, c.b_hi);
  a.resize(b.size());
  const T grads[] = {T(1), T(-2.5), T(0.3), T(7e-3)};
  for (size_t i = 0; i < b.size(); ++i)
    a[i] = c.a_is_grad ? grads[i % 4] : b[(i * 7919) % b.size()];
}

template <typename T>
void check_all_binary() {
  for (const BinaryCase& c : kBinary) {
    std::vector<T> a, b;
    binary_inputs(c, a, b);
    const T p = static_cast<T>(c.p);
    std::vector<BinaryRef> ref(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      rounded = [](L v) { return L(static_cast<T>(v)); };
      ref[i] = c.ref(a[i], b[i], p);
    }
    const double bound = sizeof(T) == 4 ? c.bound_f32 : c.bound_f64;
    for (const Target* t : supported()) {
      std::vector<T> y(a.size());
      t->of<T>()(c.fn, Broadcast::none)(a.data(), b.data(), y.data(),
                                        static_cast<int64_t>(a.size()), p);
      Worst w;
      for (size_t i = 0; i < a.size(); ++i) {
        w.add(ulp_error<T>(y[i], ref[i].value, ref[i].scale), b[i], a[i], y[i], ref[i].value);
      }
      report(c.name, sizeof(T), *t, w);
      EXPECT_LE(w.ulp, bound) << c.name << (sizeof(T) == 4 ? " f32" : " f64") << " on " << t->name
                              << ": " << w.str();
    }
  }
}

TEST(VecUlp, BinaryF32) {
  check_all_binary<float>();
}
TEST(VecUlp, BinaryF64) {
  check_all_binary<double>();
}

}  // namespace
}  // namespace aotgrad::kernels::vec
