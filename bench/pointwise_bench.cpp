// The vector pointwise kernels (src/kernels/vec, runtime ISA dispatch) against the scalar path
// they replaced (the elementwise engine's `omp simd` loop over libm), measured in one run.
//
//   OMP_NUM_THREADS=1 ./build/pointwise_bench [elements] [reps]   (defaults 1048576, 7)
//
// Both sides run through the same elementwise engine on the same f32 inputs, so the ratio is the
// element math alone. Each timing is the minimum over `reps` repetitions (>= 5) of the mean of a
// few calls; the machine is shared, so read the ratios, not the absolute times. A second table
// times SLEEF's exp/log/tanh (what the kernels use) against Highway's own hwy/contrib/math on
// the active target, with each one's worst error (ulp, against libm in double) on the same data.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "kernels/arith.h"
#include "kernels/elementwise.h"
#include "kernels/vec/math_choice.h"
#include "kernels/vec/vec.h"

namespace ag = aotgrad;
namespace ew = aotgrad::kernels::elementwise;
namespace vec = aotgrad::kernels::vec;
namespace arith = aotgrad::kernels::arith;
using ag::Tensor;

namespace {

// Minimum over reps of the mean time of one call of f, in microseconds.
double best_us(int reps, const std::function<void()>& f) {
  f();  // warm: pages, dispatch tables
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < reps; ++r) {
    constexpr int kCalls = 5;
    const auto t0 = std::chrono::steady_clock::now();
    for (int c = 0; c < kCalls; ++c) f();
    const auto t1 = std::chrono::steady_clock::now();
    best = std::min(best, std::chrono::duration<double, std::micro>(t1 - t0).count() / kCalls);
  }
  return best;
}

Tensor uniform(int64_t n, float lo, float hi, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (float& x : v) {
    s = s * 1664525u + 1013904223u;
    x = lo + (hi - lo) * static_cast<float>(s >> 8) / static_cast<float>(1u << 24);
  }
  return ag::from_vector(v, {n});
}

void print_row(const char* name, double old_us, double new_us, int64_t n) {
  std::printf("%-22s %10.1f %10.1f %8.2fx %9.2f\n", name, old_us, new_us, old_us / new_us,
              new_us * 1e3 / static_cast<double>(n));
}

// Times one unary op both ways. `old` is a lambda (inlined into the engine's loop, as the old
// kernels were).
template <typename Old>
void unary_row(const char* name, vec::UnaryFn fn, float p, const Tensor& in, Tensor& out, int reps,
               Old old) {
  const double old_us = best_us(reps, [&] { ew::run<float, float>(out, {in}, old); });
  const double new_us =
      best_us(reps, [&] { ew::run_vec<float>(out, in, vec::active().f32[fn], p); });
  print_row(name, old_us, new_us, in.numel());
}

template <typename Old>
void binary_row(const char* name, vec::BinaryFn fn, float p, const Tensor& a, const Tensor& b,
                Tensor& out, int reps, Old old) {
  const double old_us = best_us(reps, [&] { ew::run<float, float, float>(out, {a, b}, old); });
  const auto kernel = vec::active().f32(fn, vec::Broadcast::none);
  const double new_us = best_us(reps, [&] { ew::run_vec<float>(out, a, b, kernel, p); });
  print_row(name, old_us, new_us, a.numel());
}

// Worst error of y (f32) against f in double, in ulps of the f32 result.
double worst_ulp(const std::vector<float>& x, const std::vector<float>& y, double (*f)(double)) {
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = f(x[i]);
    const float r = static_cast<float>(ref);
    if (!std::isfinite(r)) continue;
    const double ulp =
        std::max(static_cast<double>(std::nextafter(std::fabs(r), INFINITY) - std::fabs(r)), 1e-45);
    worst = std::max(worst, std::fabs(static_cast<double>(y[i]) - ref) / ulp);
  }
  return worst;
}

void compare_math_libraries(int64_t n, int reps) {
  std::printf("\nexp/log/tanh on %s, one thread, no engine: SLEEF vs Highway contrib\n",
              vec::active().name);
  std::printf("%-6s %10s %10s %8s %10s %10s\n", "op", "sleef us", "hwy us", "hwy/sleef",
              "sleef ulp", "hwy ulp");
  for (const vec::MathCandidate& c : vec::math_candidates()) {
    const bool log = std::string(c.name) == "log";
    const std::vector<float> x =
        uniform(n, log ? 1e-3f : -10.0f, log ? 100.0f : 10.0f, 11).to_vector<float>();
    std::vector<float> ys(x.size()), yh(x.size());
    const double ts = best_us(reps, [&] { c.sleef(x.data(), ys.data(), n, 0); });
    const double th = best_us(reps, [&] { c.highway(x.data(), yh.data(), n, 0); });
    double (*f)(double) = log ? static_cast<double (*)(double)>(std::log)
                          : std::string(c.name) == "exp"
                              ? static_cast<double (*)(double)>(std::exp)
                              : static_cast<double (*)(double)>(std::tanh);
    std::printf("%-6s %10.1f %10.1f %8.2fx %10.2f %10.2f\n", c.name, ts, th, th / ts,
                worst_ulp(x, ys, f), worst_ulp(x, yh, f));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{1} << 20;
  const int reps = std::max(5, argc > 2 ? std::atoi(argv[2]) : 7);
  std::printf("pointwise kernels, f32, %lld elements, min of %d reps; vector target %s\n",
              static_cast<long long>(n), reps, vec::active().name);
  std::printf("%-22s %10s %10s %9s %9s\n", "op", "scalar us", "vector us", "speedup", "ns/elem");
  const Tensor x = uniform(n, -8, 8, 1), xp = uniform(n, 1e-3f, 8, 2);
  const Tensor g = uniform(n, -1, 1, 3), y = uniform(n, -1, 1, 4);
  Tensor out = ag::make_tensor({n}, ag::DType::f32);
  using U = vec::UnaryFn;
  using B = vec::BinaryFn;
  unary_row("exp", U::exp, 0, x, out, reps, [](float v) { return std::exp(v); });
  unary_row("log", U::log, 0, xp, out, reps, [](float v) { return std::log(v); });
  unary_row("tanh", U::tanh, 0, x, out, reps, [](float v) { return std::tanh(v); });
  unary_row("sigmoid", U::sigmoid, 0, x, out, reps, [](float v) { return 1 / (1 + std::exp(-v)); });
  unary_row("erf", U::erf, 0, x, out, reps, [](float v) { return std::erf(v); });
  unary_row("gelu (erf)", U::gelu_erf, 0, x, out, reps, [](float v) { return arith::gelu_erf(v); });
  unary_row("gelu (tanh)", U::gelu_tanh, 0, x, out, reps,
            [](float v) { return arith::gelu_tanh(v); });
  unary_row("silu", U::silu, 0, x, out, reps, [](float v) { return v / (1 + std::exp(-v)); });
  unary_row("relu", U::relu, 0, x, out, reps, [](float v) { return v < 0 ? 0.0f : v; });
  unary_row("sqrt", U::sqrt, 0, xp, out, reps, [](float v) { return std::sqrt(v); });
  unary_row("rsqrt", U::rsqrt, 0, xp, out, reps, [](float v) { return 1 / std::sqrt(v); });
  unary_row("pow(x, 2)", U::pow, 2, x, out, reps, [](float v) { return v * v; });
  unary_row("pow(x, 1.7)", U::pow, 1.7f, xp, out, reps, [](float v) { return std::pow(v, 1.7f); });
  binary_row("add", B::add, 1, x, g, out, reps, [](float a, float b) { return a + 1.0f * b; });
  binary_row("sub", B::sub, 1, x, g, out, reps, [](float a, float b) { return a - 1.0f * b; });
  binary_row("mul", B::mul, 0, x, g, out, reps, [](float a, float b) { return a * b; });
  binary_row("div", B::div, 0, x, xp, out, reps, [](float a, float b) { return a / b; });
  binary_row("tanh_backward", B::tanh_backward, 0, g, y, out, reps,
             [](float a, float b) { return a * (1 - b * b); });
  binary_row("sigmoid_backward", B::sigmoid_backward, 0, g, y, out, reps,
             [](float a, float b) { return a * (1 - b) * b; });
  binary_row("threshold_backward", B::threshold_backward, 0, g, x, out, reps,
             [](float a, float b) { return b <= 0 ? 0.0f : a; });
  binary_row("gelu_backward (erf)", B::gelu_erf_backward, 0, g, x, out, reps,
             [](float a, float b) { return a * arith::gelu_erf_derivative(b); });
  binary_row("gelu_backward (tanh)", B::gelu_tanh_backward, 0, g, x, out, reps,
             [](float a, float b) { return a * arith::gelu_tanh_derivative(b); });
  binary_row("silu_backward", B::silu_backward, 0, g, x, out, reps, [](float a, float b) {
    const float s = 1 / (1 + std::exp(-b));
    return a * s * (1 + b * (1 - s));
  });
  compare_math_libraries(n, reps);
  return 0;
}
