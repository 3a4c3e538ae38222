// Math ops: clamp, abs, sign, max/min along a dim, argmax, var/std, logsumexp, cumsum — values
// against PyTorch 1.13 (numbers pasted from torch), negative dims, keepdim, empty and size-1
// dims, strided inputs, finite-difference gradients, compiled == eager; and f16/bf16 storage.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::f64;
using testing::gradcheck;
using testing::i64;
using testing::test_input;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Tensor f32(std::vector<float> v, const IntList& sizes) {
  return from_vector(v, sizes);
}
// The 3x4 matrix every value test below reads (printed as `x` by the torch script).
Tensor x34() {
  return f32({1.5, -2.0, 3.25, 0.5, -0.75, 4.0, -1.0, 2.0, 0.25, 0.125, -3.5, 1.0}, {3, 4});
}

std::vector<int64_t> longs(const Tensor& t) {
  return t.to_vector<int64_t>();
}

// ---- clamp / abs / sign ----

TEST(MathClamp, Values) {
  Tensor x = x34();
  EXPECT_TRUE(
      allclose(clamp(x, -1, 2),
               f32({1.5, -1.0, 2.0, 0.5, -0.75, 2.0, -1.0, 2.0, 0.25, 0.125, -1.0, 1.0}, {3, 4})));
  EXPECT_TRUE(allclose(clamp(x, 0.5),
                       f32({1.5, 0.5, 3.25, 0.5, 0.5, 4.0, 0.5, 2.0, 0.5, 0.5, 0.5, 1.0}, {3, 4})));
  EXPECT_TRUE(allclose(clamp(x, std::nullopt, 0.0),
                       f32({0, -2.0, 0, 0, -0.75, 0, -1.0, 0, 0, 0, -3.5, 0}, {3, 4})));
  // min > max: every element becomes max, as torch.
  EXPECT_TRUE(allclose(clamp(f32({1, 5}, {2}), 3, 2), f32({2, 2}, {2})));
  // NaN stays NaN.
  Tensor n = clamp(f64({kNaN, -3}, {2}), -1, 1);
  EXPECT_TRUE(std::isnan(n.to_vector<double>()[0]));
  EXPECT_EQ(n.to_vector<double>()[1], -1.0);
}

TEST(MathClamp, TypePromotionAndErrors) {
  Tensor ints = i64({1, 5, -3}, {3});
  Tensor c = clamp(ints, 0, 3);
  EXPECT_EQ(c.dtype(), DType::i64);
  EXPECT_EQ(longs(c), (std::vector<int64_t>{1, 3, 0}));
  Tensor cf = clamp(ints, 2.5);
  EXPECT_EQ(cf.dtype(), DType::f32);
  EXPECT_TRUE(allclose(cf, f32({2.5, 5, 2.5}, {3})));
  EXPECT_EQ(clamp(from_vector(std::vector<bool>{true, false}, {2}), 0, 1).dtype(), DType::i64);
  EXPECT_THROW(clamp(ints, std::nullopt, std::nullopt), std::invalid_argument);
}

TEST(MathClamp, StridedInput) {
  Tensor xt = transpose(x34(), 0, 1);  // [4, 3], strides {1, 4}
  EXPECT_TRUE(allclose(clamp(xt, -1, 2), contiguous(clamp(x34(), -1, 2)).t().contiguous()));
}

TEST(MathClamp, Gradcheck) {
  // Values kept away from the bounds, where the derivative jumps.
  Tensor x = f64({-2.0, -0.6, 0.1, 0.4, 1.7, 3.0}, {2, 3}).requires_grad_();
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& in) { return clamp(in[0], -0.5, 0.5); }, {x}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return clamp(in[0], 0.0); }, {x}));
  Tensor base = test_input({4, 3}, -2, 2, 3);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return clamp(transpose(in[0], 0, 1), std::nullopt, 0.3);
      },
      {base}));
  // Exact gradient: 1 inside [min, max] (inclusive), 0 outside.
  Tensor y = f64({-2, -1, 0, 1, 2}, {5}).requires_grad_();
  sum(clamp(y, -1, 1)).backward();
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 1, 1, 1, 0}));
}

TEST(MathAbsSign, Values) {
  Tensor v = f32({-1.5, 0.0, 2.0, -0.0}, {4});
  EXPECT_TRUE(allclose(abs(v), f32({1.5, 0, 2, 0}, {4})));
  EXPECT_TRUE(allclose(sign(v), f32({-1, 0, 1, 0}, {4})));
  EXPECT_EQ(sign(f64({kNaN}, {1})).to_vector<double>()[0], 0.0);  // as torch 1.13 on CPU
  Tensor ints = i64({-3, 0, 7, std::numeric_limits<int64_t>::min()}, {4});
  EXPECT_EQ(abs(ints).dtype(), DType::i64);
  EXPECT_EQ(longs(abs(ints)), (std::vector<int64_t>{3, 0, 7, std::numeric_limits<int64_t>::min()}));
  EXPECT_EQ(longs(sign(ints)), (std::vector<int64_t>{-1, 0, 1, -1}));
  Tensor b = from_vector(std::vector<bool>{true, false}, {2});
  EXPECT_EQ(sign(b).dtype(), DType::b8);
  EXPECT_EQ(sign(b).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_THROW(abs(b), std::invalid_argument);
  Tensor xt = transpose(x34(), 0, 1);
  EXPECT_TRUE(allclose(abs(xt), abs(contiguous(xt))));
}

TEST(MathAbsSign, Gradients) {
  Tensor x = test_input({3, 4}, 0.2, 1.0, 5);  // keep away from 0
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return abs(mul(in[0], f64({1, -1, 1, -1}, {4})));
      },
      {x}));
  Tensor y = f64({-2, 3}, {2}).requires_grad_();
  sum(sign(y)).backward();
  ASSERT_TRUE(y.grad().defined());
  EXPECT_EQ(y.grad().to_vector<double>(), (std::vector<double>{0, 0}));
}

// ---- max / min along a dim, argmax ----

TEST(MathMaxMin, Values) {
  auto [mv, mi] = max(x34(), 1);
  EXPECT_TRUE(allclose(mv, f32({3.25, 4.0, 1.0}, {3})));
  EXPECT_EQ(longs(mi), (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(mi.dtype(), DType::i64);
  auto [nv, ni] = min(x34(), -2, /*keepdim=*/true);
  EXPECT_EQ(nv.sizes(), (IntList{1, 4}));
  EXPECT_TRUE(allclose(nv, f32({-0.75, -2.0, -3.5, 0.5}, {1, 4})));
  EXPECT_EQ(longs(ni), (std::vector<int64_t>{1, 0, 2, 0}));
  // A transposed input walks its strided lanes.
  auto [tv, ti] = max(transpose(x34(), 0, 1), 1);
  EXPECT_TRUE(allclose(tv, f32({1.5, 4.0, 3.25, 2.0}, {4})));
  EXPECT_EQ(longs(ti), (std::vector<int64_t>{0, 1, 0, 1}));
}

TEST(MathMaxMin, TiesNaNAndEdgeShapes) {
  auto [v, i] = max(f32({1, 3, 3, 2}, {4}), 0);
  EXPECT_EQ(longs(i), (std::vector<int64_t>{1}));  // the first of the tied maxima
  auto [nv, ni] = max(f64({1, 3, kNaN, 5, kNaN}, {5}), 0);
  EXPECT_TRUE(std::isnan(nv.item<double>()));
  EXPECT_EQ(ni.item<int64_t>(), 2);
  auto [lv, li] = min(f64({1, 1, 3}, {3}), 0);
  EXPECT_EQ(li.item<int64_t>(), 0);
  // 0-dim: dim 0 and -1 are accepted, keepdim keeps the shape [].
  auto [sv, si] = max(scalar_tensor(5.0, DType::f32), -1, true);
  EXPECT_EQ(sv.dim(), 0);
  EXPECT_EQ(sv.item<float>(), 5.0f);
  EXPECT_EQ(si.item<int64_t>(), 0);
  // An empty kept dim gives empty results; an empty reduced dim is an error.
  auto [ev, ei] = max(zeros({0, 3}), 1);
  EXPECT_EQ(ev.sizes(), (IntList{0}));
  EXPECT_THROW(max(zeros({0, 3}), 0), std::invalid_argument);
  // size-1 reduced dim, integers and bools.
  auto [ov, oi] = min(i64({4, -2, 9}, {3, 1}), 1);
  EXPECT_EQ(longs(ov), (std::vector<int64_t>{4, -2, 9}));
  EXPECT_EQ(longs(oi), (std::vector<int64_t>{0, 0, 0}));
  auto [bv, bi] = max(from_vector(std::vector<bool>{false, true}, {2}), 0);
  EXPECT_EQ(bv.dtype(), DType::b8);
  EXPECT_EQ(bi.item<int64_t>(), 1);
}

TEST(MathMaxMin, IndicesDoNotRequireGrad) {
  Tensor x = test_input({3, 4}, -1, 1, 7);
  auto [v, i] = max(x, 1);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_FALSE(i.requires_grad());
}

TEST(MathMaxMin, Gradcheck) {
  Tensor x = test_input({3, 5}, -1, 1, 11);  // distinct values: no ties
  for (int64_t dim : {0, 1, -1})
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) { return std::get<0>(max(in[0], dim, keepdim)); },
          {x}))
          << "max dim " << dim << " keepdim " << keepdim;
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) { return std::get<0>(min(in[0], dim, keepdim)); },
          {x}))
          << "min dim " << dim << " keepdim " << keepdim;
    }
  Tensor y = test_input({2, 3, 4}, -1, 1, 12);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return std::get<0>(max(permute(in[0], {2, 0, 1}), 1));
      },
      {y}));
  // The gradient lands on the arg-max only.
  Tensor z = f64({1, 5, 2, 7, 0, 3}, {2, 3}).requires_grad_();
  sum(std::get<0>(max(z, 1))).backward();
  EXPECT_EQ(z.grad().to_vector<double>(), (std::vector<double>{0, 1, 0, 1, 0, 0}));
}

TEST(MathArgmax, Values) {
  Tensor x = x34();
  EXPECT_EQ(argmax(x).dim(), 0);
  EXPECT_EQ(argmax(x).item<int64_t>(), 5);
  EXPECT_EQ(longs(argmax(x, 0)), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(argmax(x, -1, true).sizes(), (IntList{3, 1}));
  EXPECT_EQ(argmax(x, std::nullopt, true).sizes(), (IntList{1, 1}));
  // Flattened index is in logical order, also for a transposed input.
  EXPECT_EQ(argmax(transpose(x, 0, 1)).item<int64_t>(), 4);
  EXPECT_EQ(longs(argmax(i64({1, 5, 7, 2}, {2, 2}), 0)), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(argmax(f64({1, 3, 3, kNaN, kNaN}, {5})).item<int64_t>(), 3);
  EXPECT_EQ(argmax(scalar_tensor(3.0, DType::f32)).item<int64_t>(), 0);
  EXPECT_THROW(argmax(zeros({0})), std::invalid_argument);
  EXPECT_FALSE(argmax(test_input({3}, -1, 1, 1)).requires_grad());
}

// ---- var / std ----

TEST(MathVar, Values) {
  Tensor x = x34();
  EXPECT_TRUE(allclose(var(x), f32({4.504142761230469f}, {}), 1e-6));
  EXPECT_TRUE(allclose(var(x, std::nullopt, 0), f32({4.12879753112793f}, {}), 1e-6));
  EXPECT_TRUE(allclose(var(x, IntList{1}),
                       f32({4.807291507720947f, 5.682291507720947f, 4.06640625f}, {3}), 1e-6));
  EXPECT_TRUE(allclose(
      std(x, IntList{0}, 0, true),
      f32({0.9204467535018921f, 2.483976364135742f, 2.7863755226135254f, 0.6236095428466797f},
          {1, 4}),
      1e-6));
  EXPECT_TRUE(allclose(std(x, IntList{-1}),
                       f32({2.192553758621216f, 2.383755683898926f, 2.016533136367798f}, {3}),
                       1e-6));
  // Two reduced dims of a permuted input (the kernel copies them into one run).
  Tensor y = permute(pow(view(arange(0.0, 24.0), {2, 3, 4}), 1.5), {2, 0, 1});
  EXPECT_TRUE(allclose(var(y, IntList{0, 2}), f32({152.84408569335938f, 509.8607177734375f}, {2}),
                       1e-4, 1e-6));
  EXPECT_TRUE(allclose(var(x, IntList{}), var(x)));  // empty list = every dim
}

TEST(MathVar, DegenerateCounts) {
  EXPECT_TRUE(std::isnan(var(f32({1}, {1})).item<float>()));  // n - correction = 0, sum 0
  EXPECT_TRUE(std::isinf(var(f32({1, 2}, {2}), std::nullopt, 3).item<float>()));
  EXPECT_TRUE(std::isnan(var(zeros({0})).item<float>()));
  EXPECT_EQ(var(f32({1, 2, 3, 4}, {4, 1}), IntList{1}, 0).to_vector<float>(),
            (std::vector<float>{0, 0, 0, 0}));
  EXPECT_THROW(var(i64({1, 2}, {2})), std::invalid_argument);
  EXPECT_THROW(var(x34(), IntList{1, -1}), std::invalid_argument);
}

TEST(MathVar, Gradcheck) {
  Tensor x = test_input({3, 4}, -1, 1, 21);
  for (int correction : {0, 1}) {
    for (bool keepdim : {false, true}) {
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            return var(in[0], IntList{1}, correction, keepdim);
          },
          {x}));
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            return std(in[0], IntList{0}, correction, keepdim);
          },
          {x}));
    }
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return std(in[0], std::nullopt, correction); }, {x}));
  }
  Tensor y = test_input({2, 3, 4}, -1, 1, 22);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return var(permute(in[0], {2, 0, 1}), IntList{0, 2});
      },
      {y}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return std(transpose(in[0], 1, 2), IntList{-1}, 0); },
      {y}));
}

// ---- logsumexp ----

TEST(MathLogsumexp, Values) {
  Tensor x = x34();
  EXPECT_TRUE(allclose(logsumexp(x, {1}),
                       f32({3.467487096786499f, 4.140392303466797f, 1.6420315504074097f}, {3}),
                       1e-6));
  EXPECT_TRUE(allclose(
      logsumexp(x, {0}, true),
      f32({1.8306727409362793f, 4.022967338562012f, 3.26531720161438f, 2.4643688201904297f},
          {1, 4}),
      1e-6));
  EXPECT_TRUE(allclose(logsumexp(x, {0, 1}), f32({4.605661869049072f}, {}), 1e-6));
  EXPECT_TRUE(allclose(logsumexp(transpose(x, 0, 1), {-2}), logsumexp(x, {1})));
  EXPECT_TRUE(allclose(logsumexp(f32({1000, 1001, 999}, {3}), {0}), f32({1001.4075927734375f}, {}),
                       0, 1e-7));
  Tensor ints = logsumexp(i64({1, 2, 3}, {3}), {0});
  EXPECT_EQ(ints.dtype(), DType::f32);
  EXPECT_NEAR(ints.item<float>(), 3.4076058864593506, 1e-6);
}

TEST(MathLogsumexp, InfinitiesAndEmpty) {
  EXPECT_EQ(logsumexp(f64({kInf, 1}, {2}), {0}).item<double>(), kInf);
  EXPECT_EQ(logsumexp(f64({-kInf, -kInf}, {2}), {0}).item<double>(), -kInf);
  EXPECT_TRUE(std::isnan(logsumexp(f64({kNaN, 1}, {2}), {0}).item<double>()));
  Tensor e = logsumexp(zeros({2, 0}), {1});
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{-INFINITY, -INFINITY}));
}

TEST(MathLogsumexp, Gradcheck) {
  Tensor x = test_input({3, 4}, -2, 2, 31);
  for (bool keepdim : {false, true}) {
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return logsumexp(in[0], {-1}, keepdim); }, {x}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return logsumexp(in[0], {0, 1}, keepdim);
        },
        {x}));
  }
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return logsumexp(transpose(in[0], 0, 1), {0}); }, {x}));
}

// ---- cumsum ----

TEST(MathCumsum, Values) {
  Tensor x = x34();
  EXPECT_TRUE(allclose(
      cumsum(x, 1),
      f32({1.5, -0.5, 2.75, 3.25, -0.75, 3.25, 2.25, 4.25, 0.25, 0.375, -3.125, -2.125}, {3, 4})));
  EXPECT_TRUE(
      allclose(cumsum(x, -2),
               f32({1.5, -2.0, 3.25, 0.5, 0.75, 2.0, 2.25, 2.5, 1.0, 2.125, -1.25, 3.5}, {3, 4})));
  EXPECT_TRUE(
      allclose(cumsum(transpose(x, 0, 1), -1),
               f32({1.5, 0.75, 1.0, -2.0, 2.0, 2.125, 3.25, 2.25, -1.25, 0.5, 2.5, 3.5}, {4, 3})));
  Tensor ints = cumsum(i64({3, -1, 4, 1}, {4}), 0);
  EXPECT_EQ(ints.dtype(), DType::i64);
  EXPECT_EQ(longs(ints), (std::vector<int64_t>{3, 2, 6, 7}));
  Tensor bools = cumsum(from_vector(std::vector<bool>{true, true, false}, {3}), 0);
  EXPECT_EQ(bools.dtype(), DType::i64);
  EXPECT_EQ(longs(bools), (std::vector<int64_t>{1, 2, 2}));
  EXPECT_EQ(cumsum(x, 0, DType::f64).dtype(), DType::f64);
  EXPECT_EQ(cumsum(scalar_tensor(2.0, DType::f32), 0).item<float>(), 2.0f);
  EXPECT_EQ(cumsum(zeros({0, 3}), 1).sizes(), (IntList{0, 3}));
  EXPECT_THROW(cumsum(x, 2), std::invalid_argument);
}

TEST(MathCumsum, Gradcheck) {
  Tensor x = test_input({3, 4}, -1, 1, 41);
  for (int64_t dim : {0, 1, -1})
    EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return cumsum(in[0], dim); }, {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) { return cumsum(transpose(in[0], 0, 1), 1); }, {x}));
  Tensor one = test_input({3, 1}, -1, 1, 42);
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return cumsum(in[0], 1); }, {one}));
}

// ---- f16 / bf16 storage ----

TEST(MathHalf, StorageRoundTrips) {
  Tensor v = f32({0.1f, 1e-6f, 70000.0f, -2.5f, 1.0f / 3.0f, 65504.0f}, {6});
  Tensor h = to(v, DType::f16);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(to(h, DType::f32).to_vector<double>(),
            (std::vector<double>{0.0999755859375, 1.0132789611816406e-06, kInf, -2.5,
                                 0.333251953125, 65504.0}));
  EXPECT_EQ(to(to(v, DType::bf16), DType::f32).to_vector<double>(),
            (std::vector<double>{0.10009765625, 9.98377799987793e-07, 70144.0, -2.5, 0.333984375,
                                 65536.0}));
  // Rounding at the top of the f16 range, NaN and signed zero (as torch).
  Tensor edges = to(to(f32({65520.0f, 65519.0f, NAN, -0.0f}, {4}), DType::f16), DType::f32);
  std::vector<float> e = edges.to_vector<float>();
  EXPECT_EQ(e[0], INFINITY);
  EXPECT_EQ(e[1], 65504.0f);
  EXPECT_TRUE(std::isnan(e[2]));
  EXPECT_TRUE(e[3] == 0.0f && std::signbit(e[3]));
  // f16 -> bf16 -> f16 of a value both represent exactly is lossless.
  Tensor exact = to(f32({-2.5f, 0.75f, 1024.0f}, {3}), DType::f16);
  EXPECT_EQ(to(to(exact, DType::bf16), DType::f16).to_vector<float>(),
            (std::vector<float>{-2.5f, 0.75f, 1024.0f}));
}

TEST(MathHalf, PointwiseComputesInF32AndStores16Bit) {
  Tensor h = to(f32({0.1f, 0.2f, 1.0f / 3.0f}, {3}), DType::f16);
  Tensor r = add(h, mul(h, 3));
  EXPECT_EQ(r.dtype(), DType::f16);
  EXPECT_EQ(to(r, DType::f32).to_vector<double>(),
            (std::vector<double>{0.39990234375, 0.7998046875, 1.3330078125}));
  Tensor b = to(f32({0.1f, 0.2f, 1.0f / 3.0f}, {3}), DType::bf16);
  Tensor p = mul(b, b);
  EXPECT_EQ(p.dtype(), DType::bf16);
  EXPECT_EQ(to(p, DType::f32).to_vector<double>(),
            (std::vector<double>{0.010009765625, 0.0400390625, 0.111328125}));
  // This family's ops on 16-bit storage.
  Tensor hx = to(x34(), DType::f16);
  EXPECT_EQ(abs(hx).dtype(), DType::f16);
  EXPECT_TRUE(allclose(to(abs(hx), DType::f32), abs(x34())));
  EXPECT_TRUE(allclose(to(clamp(hx, -1, 2), DType::f32), clamp(x34(), -1, 2)));
  EXPECT_TRUE(allclose(to(cumsum(hx, 1), DType::f32), cumsum(x34(), 1), 1e-3, 1e-3));
  EXPECT_TRUE(allclose(to(var(hx, IntList{1}), DType::f32), var(x34(), IntList{1}), 1e-2, 1e-3));
  EXPECT_TRUE(allclose(to(std::get<0>(max(hx, 0)), DType::f32), std::get<0>(max(x34(), 0))));
  EXPECT_EQ(logsumexp(to(x34(), DType::bf16), {1}).dtype(), DType::bf16);
}

// ---- meta agrees with the kernel ----

// Every row's meta must promise exactly the dtype, sizes and strides its kernel returns.
TEST(MathMeta, MatchesKernelOutputs) {
  using ops::Arg;
  const Arg none = std::monostate{};
  Tensor x = x34(), xt = transpose(x34(), 0, 1), h = to(x34(), DType::f16);
  Tensor ints = i64({4, -2, 9, 1, 0, 3}, {2, 3}), s = scalar_tensor(2.5, DType::f64);
  Tensor b = from_vector(std::vector<bool>{true, false, true}, {3}), empty = zeros({0, 3});
  const std::vector<std::pair<std::string_view, ops::OpArgs>> calls = {
      {"aten.clamp.default", {x, Scalar(-1), Scalar(2.5)}},
      {"aten.clamp.default", {ints, Scalar(0.5), none}},
      {"aten.clamp.default", {h, none, Scalar(1)}},
      {"aten.clamp.default", {b, Scalar(0), Scalar(1)}},
      {"aten.abs.default", {ints}},
      {"aten.abs.default", {xt}},
      {"aten.sign.default", {b}},
      {"aten.sign.default", {s}},
      {"aten.max.dim", {x, int64_t{-1}, true}},
      {"aten.max.dim", {s, int64_t{0}, true}},
      {"aten.min.dim", {empty, int64_t{1}, false}},
      {"aten.min.dim", {h, int64_t{0}, false}},
      {"aten.argmax.default", {xt, none, true}},
      {"aten.argmax.default", {ints, int64_t{0}, false}},
      {"aten.var.correction", {x, IntList{0, 1}, Scalar(0), true}},
      {"aten.var.correction", {h, none, none, false}},
      {"aten.std.correction", {xt, IntList{-1}, Scalar(1), false}},
      {"aten.std.correction", {s, IntList{0}, none, true}},
      {"aten.logsumexp.default", {ints, IntList{1}, true}},
      {"aten.logsumexp.default", {empty, IntList{1}, false}},
      {"aten.cumsum.default", {b, int64_t{0}, none}},
      {"aten.cumsum.default", {xt, int64_t{1}, DType::f64}},
      {"aten.cumsum.default", {s, int64_t{-1}, none}},
  };
  for (const auto& [name, call] : calls) {
    const ops::OpDef& op = ops::lookup(name);
    ops::OpArgs args = call;
    ops::normalize(op, args);
    std::vector<ops::TensorMeta> meta = op.meta(args);
    std::vector<Tensor> out = op.kernel(args);
    ASSERT_EQ(meta.size(), out.size()) << name;
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_EQ(dtype_name(meta[i].dtype), dtype_name(out[i].dtype())) << name << " result " << i;
      EXPECT_EQ(meta[i].sizes, out[i].sizes()) << name << " result " << i;
      EXPECT_EQ(meta[i].strides, out[i].strides()) << name << " result " << i;
    }
  }
}

// ---- compiled == eager ----

TEST(MathCompiled, ReductionsAndPointwise) {
  auto fn = [](const Tensor& x, const Tensor& w) {
    Tensor h = clamp(mm(x, w), -0.8, 0.8);
    Tensor m = std::get<0>(max(h, 1, true));
    Tensor s = add(logsumexp(h, {1}, true), std(h, IntList{1}, 1, true));
    return sum(add(add(mul(abs(h), m), s), mul(cumsum(h, 1), var(h, IntList{0}, 0))));
  };
  testing::expect_compiled_matches_eager(
      fn, testing::inputs(test_input({4, 5}, -1, 1, 51), test_input({5, 6}, -1, 1, 52)));
}

TEST(MathCompiled, MultiOutputWithIndices) {
  auto fn = [](const Tensor& x) {
    auto [v, i] = min(x, 0);
    return std::make_tuple(mul(v, 2.0), i, argmax(x, 1));
  };
  testing::expect_compiled_matches_eager(fn, testing::inputs(test_input({3, 4}, -1, 1, 61)));
}

}  // namespace
}  // namespace aotgrad
