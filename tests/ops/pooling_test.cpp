// Pooling: max_pool2d_with_indices (padding, ceil_mode, dilation, NaN) and _adaptive_avg_pool2d
// (windows that do not divide the input) against PyTorch 1.13 literals, their backward rows,
// finite-difference gradients, strided inputs, errors, compiled == eager.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::contains;
using testing::error_of;
using testing::f64;
using testing::gradcheck;
using testing::i64;
using testing::pattern;
using testing::test_input;

TEST(PoolingMax, PaddedCeilModeMatchesTorch) {
  Tensor x = pattern({1, 2, 5, 5}).requires_grad_();
  auto [v, idx] = max_pool2d_with_indices(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true);
  ASSERT_EQ(v.sizes(), (IntList{1, 2, 3, 3}));
  EXPECT_TRUE(allclose(v,
                       f64({0.68, 0.88, 0.88, 0.74, 0.88, 0.94, 0.74, 0.74, 0.94, 1, 0.8, 0.26, 1,
                            0.86, 0.86, 0.72, 0.72, 0.92},
                           {1, 2, 3, 3}),
                       1e-12));
  EXPECT_EQ(idx.to_vector<int64_t>(),
            (std::vector<int64_t>{5, 8, 8, 16, 8, 19, 16, 16, 19, 5, 2, 4, 5, 13, 13, 21, 21, 24}));
  v.backward(pattern({1, 2, 3, 3}, 29, 31));
  std::vector<double> gx(50, 0.0);
  const std::pair<int, double> nonzero[] = {{5, -1},     {8, -1.42},  {16, -1.78}, {19, -1.28},
                                            {27, -0.78}, {29, -0.82}, {30, -1.6},  {38, -1.84},
                                            {46, -1.38}, {49, -0.44}};
  for (auto [i, g] : nonzero) gx[i] = g;
  EXPECT_TRUE(allclose(x.grad(), f64(gx, {1, 2, 5, 5}), 1e-12));
}

TEST(PoolingMax, DilatedAsymmetricMatchesTorch) {
  Tensor x = pattern({2, 1, 6, 7}, 53, 97);
  auto [v, idx] = max_pool2d_with_indices(x, {2, 3}, {1, 2}, {1, 1}, {2, 1}, false);
  ASSERT_EQ(v.sizes(), (IntList{2, 1, 6, 4}));
  EXPECT_TRUE(allclose(v,
                       f64({0.6,  0.78, 0.08, 0.08,  0.26, 0.44, 0.62, 0.8,  0.6,  0.78, 0.28, 0.46,
                            0.64, 0.82, 0.82, 0.8,   0.3,  0.48, 0.66, 0.66, 0.64, 0.82, 0.82, 0.12,
                            0.5,  0.68, 0.86, -0.02, 0.84, 0.34, 0.52, 0.7,  0.88, 0.88, 0.86, 0.36,
                            0.54, 0.72, 0.9,  0.9,   0.88, 0.88, 0.56, 0.56, 0.54, 0.72, 0.9,  0.9},
                           {2, 1, 6, 4}),
                       1e-12));
  EXPECT_EQ(idx.to_vector<int64_t>(),
            (std::vector<int64_t>{7,  9,  12, 12, 14, 16, 18, 20, 7,  9,  25, 27, 29, 31, 31, 20,
                                  36, 38, 40, 40, 29, 31, 31, 34, 7,  9,  11, 12, 0,  16, 18, 20,
                                  22, 22, 11, 27, 29, 31, 33, 33, 22, 22, 40, 40, 29, 31, 33, 33}));
}

TEST(PoolingMax, NaNWinsAndDefaultsAsTorch) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = f64({1, nan, 3, 0, 5, 6, 7, 8}, {1, 1, 2, 4});
  auto [v, idx] = max_pool2d_with_indices(x, {2});  // stride defaults to the kernel size
  ASSERT_EQ(v.sizes(), (IntList{1, 1, 1, 2}));
  EXPECT_TRUE(std::isnan(v.to_vector<double>()[0]));
  EXPECT_EQ(v.to_vector<double>()[1], 8);
  EXPECT_EQ(idx.to_vector<int64_t>(), (std::vector<int64_t>{1, 7}));
  // The row called with only its required arguments: ATen's defaults padding=0, dilation=1.
  const ops::OpDef& row = ops::lookup("aten.max_pool2d_with_indices.default");
  auto r = ops::dispatch(row, {pattern({1, 4, 4}), IntList{2, 2}});
  EXPECT_EQ(r[0].sizes(), (IntList{1, 2, 2}));
  EXPECT_TRUE(allclose(r[0], max_pool2d(pattern({1, 4, 4}), {2}, {2}, {0}, {1}), 0));
}

TEST(PoolingMax, Float32StridedInputAndUnbatched) {
  Tensor store = test_input({2, 6, 5, 3}, -1, 1, 4, false);
  Tensor x = store.permute({0, 3, 1, 2});  // [2, 3, 6, 5], not contiguous
  Tensor ref = max_pool2d(x.contiguous(), {3, 2}, {2, 1}, {1, 0});
  EXPECT_TRUE(allclose(max_pool2d(x, {3, 2}, {2, 1}, {1, 0}), ref, 0));
  EXPECT_TRUE(allclose(max_pool2d(x.to(DType::f32), {3, 2}, {2, 1}, {1, 0}), ref, 1e-7));
  EXPECT_TRUE(allclose(max_pool2d(x.select(0, 1), {3, 2}, {2, 1}, {1, 0}), ref.select(0, 1), 0));
}

TEST(PoolingMax, Gradcheck) {
  struct C {
    IntList shape, kernel, stride, padding, dilation;
    bool ceil;
  };
  const C cases[] = {{{2, 2, 5, 6}, {2}, {}, {0}, {1}, false},
                     {{1, 3, 7, 7}, {3}, {2}, {1}, {1}, true},
                     {{2, 6, 5}, {2, 3}, {1, 2}, {1}, {2, 1}, false},
                     {{1, 2, 6, 6}, {3}, {1}, {1}, {1}, false}};  // overlapping windows
  for (const C& c : cases) {
    Tensor x = test_input(c.shape, -1, 1, 7);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return max_pool2d(in[0], c.kernel, c.stride, c.padding, c.dilation, c.ceil);
        },
        {x}))
        << shape_to_string(c.shape);
  }
}

TEST(PoolingAdaptiveAvg, UnevenWindowsMatchTorch) {
  Tensor x = pattern({1, 2, 5, 7}).requires_grad_();
  Tensor y = adaptive_avg_pool2d(x, {3, 4});
  EXPECT_TRUE(allclose(y,
                       f64({-0.06,          0.04,           -0.1633333333,  0.105,
                            -0.03333333333, 0.06666666667,  -0.02444444444, 0.3,
                            -0.175,         0.09333333333,  -0.11,          -0.01,
                            0.085,          0.01666666667,  0.15,           -0.255,
                            0.28,           -0.06888888889, 0.06444444444,  -0.06,
                            -0.03,          0.07,           0.2033333333,   0.135},
                           {1, 2, 3, 4}),
                       1e-9));
  y.backward(pattern({1, 2, 3, 4}, 29, 31));
  // Row 0 of plane 0 and row 4 of plane 1 of the torch gradient.
  EXPECT_TRUE(allclose(
      x.grad().select(1, 0).select(1, 0),
      f64({-0.25, -0.32, -0.07, -0.1466666667, -0.07666666667, -0.2016666667, -0.125}, {1, 7}),
      1e-9));
  EXPECT_TRUE(allclose(
      x.grad().select(1, 1).select(1, 4),
      f64({-0.14, -0.24, -0.1, -0.2066666667, -0.1066666667, -0.2766666667, -0.17}, {1, 7}), 1e-9));
}

TEST(PoolingAdaptiveAvg, GradcheckAndGlobalPoolIsMean) {
  for (const IntList& out : {IntList{3, 4}, IntList{2}, IntList{5, 1}, IntList{7, 9}}) {
    Tensor x = test_input({2, 3, 5, 7}, -1, 1, 3);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return adaptive_avg_pool2d(in[0], out); }, {x}))
        << shape_to_string(out);
  }
  Tensor x = test_input({2, 3, 5, 7}, -1, 1, 3, false);
  Tensor via_row = ops::call1(ops::lookup("aten._adaptive_avg_pool2d.default"), {x, IntList{1, 1}});
  EXPECT_TRUE(allclose(adaptive_avg_pool2d(x, {1}), via_row, 1e-12));
  EXPECT_TRUE(allclose(adaptive_avg_pool2d(x, {1, 1}), mean(x, {2, 3}, true), 1e-15));
  // Same size as the input: the identity.
  EXPECT_TRUE(allclose(adaptive_avg_pool2d(x, {5, 7}), x, 1e-15));
}

TEST(PoolingErrors, NameTheArgumentAndTheFix) {
  Tensor x = zeros({1, 2, 4, 4});
  EXPECT_TRUE(contains(error_of([&] { max_pool2d(x, {3}, {1}, {2}); }),
                       "pad should be at most half of kernel size"));
  EXPECT_TRUE(contains(error_of([&] { max_pool2d(zeros({4, 4}), {2}); }), "3-D [C, H, W] or 4-D"));
  EXPECT_TRUE(contains(error_of([&] { max_pool2d(x, {5}); }), "output size is too small"));
  EXPECT_TRUE(contains(error_of([&] { max_pool2d(x, {2}, {0}); }), "stride must be >= 1"));
  EXPECT_TRUE(contains(error_of([&] {
                         max_pool2d(zeros({1, 1, 4, 4}, DType::i64), {2});
                       }),
                       "must be floating"));
  EXPECT_TRUE(contains(error_of([&] { adaptive_avg_pool2d(x, {1, 2, 3}); }), "1 or 2 entries"));
  const ops::OpDef& back = ops::lookup("aten.max_pool2d_with_indices_backward.default");
  EXPECT_TRUE(contains(error_of([&] {
                         ops::dispatch(back, {zeros({1, 2, 2, 2}), x, IntList{2}, IntList{2},
                                              IntList{0}, IntList{1}, false, zeros({1, 2, 2, 2})});
                       }),
                       "indices must be the i64"));
  EXPECT_TRUE(contains(error_of([&] {
                         ops::dispatch(back, {zeros({1, 2, 2, 2}), x, IntList{2}, IntList{2},
                                              IntList{0}, IntList{1}, false,
                                              i64(std::vector<int64_t>(8, 99), {1, 2, 2, 2})});
                       }),
                       "outside the input plane"));
}

TEST(PoolingCompiled, MatchesEager) {
  auto fn = [](const Tensor& x) {
    return adaptive_avg_pool2d(max_pool2d(x.tanh(), {3}, {2}, {1}, {1}, true), {2, 3}).sum();
  };
  Tensor xe = test_input({2, 3, 9, 8}, -1, 1, 5);
  Tensor xc = xe.detach().clone().requires_grad_();
  auto compiled = aot_function(fn);
  Tensor ye = fn(xe), yc = compiled(xc);
  EXPECT_TRUE(allclose(yc, ye, 1e-12));
  ye.backward();
  yc.backward();
  EXPECT_TRUE(allclose(xc.grad(), xe.grad(), 1e-12));
  const CompiledGraphs g = compiled.graphs();
  EXPECT_TRUE(contains(g.forward, "aten._adaptive_avg_pool2d.default")) << g.forward;
  EXPECT_TRUE(contains(g.backward, "aten._adaptive_avg_pool2d_backward.default")) << g.backward;
  EXPECT_TRUE(contains(g.backward, "aten.max_pool2d_with_indices_backward.default")) << g.backward;
}

}  // namespace
}  // namespace aotgrad

// ---- avg_pool2d (issue 18): values pasted from PyTorch 1.13, padding, ceil_mode,
// count_include_pad and divisor_override; gradients; compiled == eager ----
namespace aotgrad {
namespace {

std::vector<double> flat(const Tensor& t) {
  return to(t, DType::f64).contiguous().to_vector<double>();
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << "element " << i;
}

Tensor plane25() {
  return to(arange(25.0).view({1, 1, 5, 5}), DType::f64);
}

TEST(AvgPool2d, ValuesMatchPyTorch) {
  expect_near_all(
      flat(avg_pool2d(plane25(), {3}, {2}, {1})),
      {1.3333333333333333, 3.0, 2.6666666666666665, 7.0, 12.0, 9.0, 8.0, 13.0, 9.333333333333334});
  expect_near_all(flat(avg_pool2d(plane25(), {3}, {2}, {1}, false, false)),
                  {3.0, 4.5, 6.0, 10.5, 12.0, 13.5, 18.0, 19.5, 21.0});
  expect_near_all(flat(avg_pool2d(plane25(), {2}, {2}, {0}, true)),
                  {3.0, 5.0, 6.5, 13.0, 15.0, 16.5, 20.5, 22.5, 24.0});
  expect_near_all(flat(avg_pool2d(plane25(), {3}, {2}, {1}, true, true, 2)),
                  {6.0, 13.5, 12.0, 31.5, 54.0, 40.5, 36.0, 58.5, 42.0});
}

TEST(AvgPool2d, BackwardMatchesPyTorch) {
  Tensor x = plane25().requires_grad_();
  avg_pool2d(x, {3}, {2}, {1}, true, false).sum().backward();
  const double a = 0.25, b = 0.41666666666666663, c = 0.16666666666666666, d = 0.6944444444444444,
               e = 0.2777777777777778, f = 0.1111111111111111;
  expect_near_all(flat(x.grad()),
                  {a, b, c, b, a, b, d, e, d, b, c, e, f, e, c, b, d, e, d, b, a, b, c, b, a});
}

TEST(AvgPool2d, ErrorsNameTheOp) {
  EXPECT_THROW(avg_pool2d(plane25(), {3}, {1}, {2}), std::invalid_argument);  // pad > k/2
  EXPECT_THROW(avg_pool2d(plane25(), {2}, {2}, {0}, false, true, 0), std::invalid_argument);
  EXPECT_THROW(avg_pool2d(plane25(), {7}), std::invalid_argument);  // output size 0
}

TEST(AvgPool2d, GradcheckIncludingDoubleBackward) {
  Tensor x = testing::test_input({2, 2, 5, 4}, -1, 1, 7).requires_grad_();
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return avg_pool2d(in[0], {3, 2}, {2, 1}, {1, 1}, true, false);
      },
      {x}));
  Tensor g = testing::test_input({2, 2, 3, 5}, -1, 1, 8).requires_grad_();
  EXPECT_TRUE(testing::gradcheck(
      [&](const std::vector<Tensor>& in) {
        return ops::call1(ops::lookup("aten.avg_pool2d_backward.default"),
                          {in[0], x.detach(), IntList{3, 2}, IntList{2, 1}, IntList{1, 1}, true,
                           false, std::monostate{}});
      },
      {g}));
}

TEST(AvgPool2d, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({2, 3, 6, 6}, 1)};
      },
      [](const testing::TensorList& a) { return (avg_pool2d(a[0], {3}, {2}, {1}) * 2.0).sin(); });
}

}  // namespace
}  // namespace aotgrad
