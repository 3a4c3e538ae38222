// The cpp backend's own f32 exp, erf and tanh (codegen.cpp, kMathHelpers) against the eager
// kernels (SLEEF, within 1 ulp of the exact values): within 3 ulp everywhere, and exactly the
// eager result at the special values (NaN, ±inf, ±0, overflow, results that are subnormal or
// round to 0, the ends of each polynomial's interval). Softmax and amax over rows holding -inf
// and NaN check the vectorized max reduction's NaN rule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpp/cpp_backend.h"
#include "backends/interpreter.h"
#include "graph/parser.h"
#include "testing/values.h"

namespace ag = aotgrad;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// |got - want| in units of the last place of `want` (subnormal spacing below FLT_MIN).
double ulps(float got, float want) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : 1e9;
  if (std::isinf(want) || std::isinf(got)) return got == want ? 0 : 1e9;
  const float a = std::fabs(want);
  const double spacing = std::nextafter(a, kInf) - a;
  return std::fabs(static_cast<double>(got) - want) / spacing;
}

std::vector<float> inputs() {
  std::vector<float> v = {0.0f,      -0.0f,   kInf,     -kInf,   kNaN,    1e-30f,  -1e-30f,
                          1e-6f,     0.625f,  0.626f,   -0.625f, 0.92f,   0.921f,  -0.92f,
                          3.95f,     3.96f,   -3.95f,   10.0f,   -10.0f,  20.0f,   40.0f,
                          88.72f,    88.73f,  89.0f,    100.0f,  -87.33f, -87.34f, -100.0f,
                          -103.97f,  -104.0f, -104.5f,  -200.0f, 1e30f,   -1e30f,  13.5f,
                          -13.5f,    14.2f,   0.5f,     -0.5f,   1.0f,    -1.0f,   2.0f};
  for (int i = -2400; i <= 2400; ++i) v.push_back(static_cast<float>(i) * 0.00517f);
  while (v.size() % 32 != 0) v.push_back(0.25f);
  return v;
}

std::vector<ag::Tensor> run(bool cpp, const ag::graph::Graph& g, ag::Tensor x) {
  ag::backends::CompiledGraph f =
      cpp ? ag::backends::compile_cpp(g) : ag::backends::compile_interpreter(g);
  return f({x});
}

}  // namespace

TEST(CppMath, ExpErfTanhAndGeluMatchTheEagerKernelsWithin3UlpAndExactlyAtSpecialValues) {
  const std::vector<float> v = inputs();
  const std::string n = std::to_string(v.size());
  ag::graph::Graph g = ag::graph::parse_graph("graph f(%x: f32[" + n + "]) {\n" +
                                              "  %e: f32[" + n + "] = aten.exp.default(%x)\n" +
                                              "  %r: f32[" + n + "] = aten.erf.default(%x)\n" +
                                              "  %t: f32[" + n + "] = aten.tanh.default(%x)\n" +
                                              "  %s: f32[" + n + "] = aten.sigmoid.default(%x)\n" +
                                              "  return (%e, %r, %t, %s)\n}");
  ag::Tensor x = ag::testing::f64(std::vector<double>(v.begin(), v.end()),
                                  {static_cast<int64_t>(v.size())})
                     .to(ag::DType::f32);
  std::vector<ag::Tensor> got = run(true, g, x), want = run(false, g, x);
  const char* names[] = {"exp", "erf", "tanh", "sigmoid"};
  for (size_t o = 0; o < got.size(); ++o) {
    std::vector<float> a = got[o].to_vector<float>(), b = want[o].to_vector<float>();
    double worst = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      const double e = ulps(a[i], b[i]);
      // Where eager's result at a special input (the first 42) is NaN, ±inf, 0 or ±1, cpp's is
      // exactly the same.
      if (i < 42 && (std::isnan(b[i]) || std::isinf(b[i]) || b[i] == 0 || std::fabs(b[i]) == 1)) {
        EXPECT_TRUE(std::isnan(b[i]) ? std::isnan(a[i]) : a[i] == b[i])
            << names[o] << "(" << v[i] << "): cpp " << a[i] << ", eager " << b[i];
      }
      EXPECT_LE(e, 3.0) << names[o] << "(" << v[i] << "): cpp " << a[i] << ", eager " << b[i];
      worst = std::max(worst, e);
    }
    EXPECT_LE(worst, 3.0) << names[o];
  }
  // A subnormal result is computed, not flushed: exp(-100) = 3.72e-44.
  EXPECT_GT(got[0].to_vector<float>()[27], 0.0f);
}

TEST(CppMath, SoftmaxAndAmaxRowsWithInfinitiesAndNaN) {
  // Row 0: ordinary; row 1: masked (-inf) half; row 2: a NaN; row 3: all -inf but one; row 4:
  // +inf present (softmax gives NaN there, as eager: inf - inf).
  std::vector<double> rows;
  for (int r = 0; r < 5; ++r)
    for (int i = 0; i < 40; ++i) {
      double x = std::sin(0.37 * (r * 40 + i)) * 4;
      if (r == 1 && i % 2 == 1) x = -kInf;
      if (r == 2 && i == 17) x = kNaN;
      if (r == 3 && i != 5) x = -kInf;
      if (r == 4 && i == 33) x = kInf;
      rows.push_back(x);
    }
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f32[5,40]) {
  %s: f32[5,40] = aten._softmax.default(%x, -1, false)
  %l: f32[5,40] = aten._log_softmax.default(%x, -1, false)
  %m: f32[5] = aten.amax.default(%x, [-1])
  return (%s, %l, %m)
})");
  ag::Tensor x = ag::testing::f64(rows, {5, 40}).to(ag::DType::f32);
  std::vector<ag::Tensor> got = run(true, g, x), want = run(false, g, x);
  for (size_t o = 0; o < got.size(); ++o) {
    std::vector<float> a = got[o].to_vector<float>(), b = want[o].to_vector<float>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_LE(ulps(a[i], b[i]), 4.0) << "output " << o << " element " << i << ": cpp " << a[i]
                                       << ", eager " << b[i];
  }
  EXPECT_TRUE(std::isnan(got[2].to_vector<float>()[2]));  // amax of the row with a NaN
  EXPECT_EQ(got[0].to_vector<float>()[3 * 40 + 5], 1.0f);  // the one finite value of row 3
}

// One op gives one result per input value, wherever the element sits in its loop: a vectorized
// body and a scalar remainder must run the same function. (With glibc's vector variants, a loop
// computed sin, cos, log, pow and the f64 exp, erf and tanh with libmvec in its body and with
// libm in its remainder, so sin(x) > sin(x) came out true for an element of a fused graph: the
// cpp differential fuzzer's seed 940056.) Each op gets an input of its own length, so that it is
// a loop of its own, over about 2,000 values; then every value runs alone (a one-element loop
// has no vector body), and the bits must agree.
TEST(CppMath, EveryMathOpGivesTheSameBitsInTheVectorBodyAndTheRemainder) {
  const char* const ops[][2] = {
      {"aten.exp.default", ""},  {"aten.log.default", ""},     {"aten.sqrt.default", ""},
      {"aten.rsqrt.default", ""}, {"aten.sin.default", ""},    {"aten.cos.default", ""},
      {"aten.erf.default", ""},  {"aten.tanh.default", ""},    {"aten.sigmoid.default", ""},
      {"aten.pow.Tensor_Scalar", ", 1.7"}};
  constexpr size_t kOps = std::size(ops);
  for (const char* dtype : {"f32", "f64"}) {
    const ag::DType dt = std::string(dtype) == "f32" ? ag::DType::f32 : ag::DType::f64;
    auto length = [](size_t k, bool alone) { return alone ? 1 : static_cast<int64_t>(2000 + 3 * k); };
    auto graph = [&](bool alone) {
      std::string params, body, ret;
      for (size_t k = 0; k < kOps; ++k) {
        const std::string t = std::string(dtype) + "[" + std::to_string(length(k, alone)) + "]";
        const std::string n = std::to_string(k);
        params += (k ? ", %x" : "%x") + n + ": " + t;
        body += "  %y" + n + ": " + t + " = " + ops[k][0] + "(%x" + n + ops[k][1] + ")\n";
        ret += (k ? ", %y" : "%y") + n;
      }
      return ag::graph::parse_graph("graph f(" + params + ") {\n" + body + "  return (" + ret +
                                    ")\n}");
    };
    // Positive, so log and pow are defined; over several octaves.
    auto value = [](int64_t i) { return 0.01 + 9.0 * std::fabs(std::sin(0.7311 * static_cast<double>(i))); };
    std::vector<ag::Tensor> inputs, one_each;
    for (size_t k = 0; k < kOps; ++k) {
      std::vector<double> v;
      for (int64_t i = 0; i < length(k, false); ++i) v.push_back(value(i));
      inputs.push_back(ag::testing::f64(v, {length(k, false)}).to(dt));
    }
    std::vector<std::vector<double>> all;
    for (const ag::Tensor& y : ag::backends::compile_cpp(graph(false))(std::move(inputs)))
      all.push_back(y.to(ag::DType::f64).to_vector<double>());
    ag::backends::CompiledGraph alone = ag::backends::compile_cpp(graph(true));
    int mismatches = 0;
    for (int64_t i = 0; i < length(0, false); ++i) {
      const ag::Tensor x = ag::testing::f64({value(i)}, {1}).to(dt);
      const std::vector<ag::Tensor> got = alone(std::vector<ag::Tensor>(kOps, x));
      for (size_t k = 0; k < kOps; ++k) {
        const double a = all[k][static_cast<size_t>(i)];
        const double b = got[k].to(ag::DType::f64).item<double>();
        if (a != b && mismatches++ < 5)
          ADD_FAILURE() << dtype << " " << ops[k][0] << ops[k][1] << "(" << value(i)
                        << "): in a loop " << a << ", alone " << b;
      }
    }
    EXPECT_EQ(mismatches, 0) << dtype;
  }
}
