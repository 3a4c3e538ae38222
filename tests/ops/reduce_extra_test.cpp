// norm, all / any and argmin (ops/reduce_extra.cpp): values and gradients against PyTorch 1.13
// (numbers pasted from torch), including the subgradients at a zero norm and at ties of the
// infinity norm, finite-difference gradients, and compiled == eager under every partitioner.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::f64;
using testing::gradcheck;
using V = std::vector<double>;

void expect_values(const Tensor& got, const V& want, double tol = 1e-14) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

Tensor sample() {
  return f64({1., -3., 3., 0., 2., -1.}, {2, 3});
}

TEST(NormOp, ValuesAndGradientsMatchPyTorch) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  struct Case {
    double p;
    IntList dim;
    bool keepdim;
    V norm, grad;
  };
  const Case cases[] = {
      {1, {1}, false, {7.0, 3.0}, {1.0, -1.0, 1.0, 0.0, 1.0, -1.0}},
      // Ties at the infinity norm share the gradient.
      {kInf, {1}, true, {3.0, 2.0}, {0.0, -0.5, 0.5, 0.0, 1.0, -0.0}},
      {-kInf, {0}, false, {0.0, 2.0, 1.0}, {0.0, -0.0, 0.0, 0.0, 1.0, -1.0}},
      {3, {0, 1}, false, {3.9999999999999996}, {0.0625, -0.5625, 0.5625, 0.0, 0.25, -0.0625}},
      {1.5,
       {1},
       false,
       {5.06299771974117, 2.4472608147714756},
       {0.44442259827515235, -0.7697625202443363, 0.7697625202443363, 0.0, 0.9040134034531215,
        -0.6392340078652324}},
      {2,
       {0},
       false,
       {1.0, 3.605551275463989, 3.1622776601683795},
       {1.0, -0.8320502943378437, 0.9486832980505138, 0.0, 0.5547001962252291,
        -0.31622776601683794}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("p=" + std::to_string(c.p));
    Tensor x = sample().requires_grad_();
    Tensor n = norm(x, c.p, c.dim, c.keepdim);
    expect_values(n, c.norm);
    n.sum().backward();
    expect_values(x.grad(), c.grad);
  }
  Tensor x = sample().requires_grad_();
  Tensor n = norm(x);
  expect_values(n, {4.898979485566356});
  n.backward();
  expect_values(x.grad(), {0.20412414523193154, -0.6123724356957946, 0.6123724356957946, 0.0,
                           0.4082482904638631, -0.20412414523193154});
  expect_values(norm(sample(), 0, {1}), {3.0, 2.0});
  expect_values(norm(sample(), std::nullopt, {0, 1}), {4.898979485566356});  // Frobenius
}

TEST(NormOp, ZeroNormHasZeroGradient) {
  for (double p : {1.0, 2.0, 3.0, std::numeric_limits<double>::infinity()}) {
    SCOPED_TRACE(p);
    Tensor x = f64({0., 0., 1., 2.}, {2, 2}).requires_grad_();
    norm(x, p, {1}).sum().backward();
    std::vector<double> g = x.grad().to_vector<double>();
    EXPECT_EQ(g[0], 0.0);
    EXPECT_EQ(g[1], 0.0);
  }
  Tensor x = f64({0., 0., 1., 2.}, {2, 2}).requires_grad_();
  norm(x, 2, {1}).sum().backward();
  expect_values(x.grad(), {0.0, 0.0, 0.4472135954999579, 0.8944271909999159});
}

TEST(NormOp, GradcheckAndErrors) {
  Tensor x = testing::test_input({3, 4}, -2, 2, 11).requires_grad_();
  for (double p : {1.0, 2.0, 3.0, 1.5})
    EXPECT_TRUE(
        gradcheck([p](const std::vector<Tensor>& in) { return norm(in[0], p, {1}, true); }, {x}))
        << p;
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return norm(in[0]); }, {x}));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return norm(in[0], std::numeric_limits<double>::infinity(), {0});
      },
      {x}));
  EXPECT_THROW(norm(testing::i64({1, 2}, {2})), std::invalid_argument);
  EXPECT_THROW(norm(zeros({0, 2}, DType::f64), std::numeric_limits<double>::infinity(), {0}),
               std::invalid_argument);
  EXPECT_THROW(norm(sample(), 2, {1, -1}), std::invalid_argument);
}

TEST(AllAnyArgmin, MatchPyTorch) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Tensor t = f64({1., 0., kNaN, 0., 0., 0.}, {2, 3});
  EXPECT_EQ(all(t, 1).to_vector<bool>(), (std::vector<bool>{false, false}));
  EXPECT_EQ(any(t, 1).to_vector<bool>(), (std::vector<bool>{true, false}));  // NaN is non-zero
  EXPECT_EQ(any(t, -1, true).sizes(), (IntList{2, 1}));
  EXPECT_FALSE(all(t).item<bool>());
  EXPECT_TRUE(any(t).item<bool>());
  EXPECT_EQ(all(t).dtype(), DType::b8);
  EXPECT_EQ(all(zeros({0, 3}), 0).to_vector<bool>(), (std::vector<bool>{true, true, true}));
  EXPECT_EQ(any(zeros({0, 3}), 0).to_vector<bool>(), (std::vector<bool>{false, false, false}));
  EXPECT_TRUE(all(gt(sample(), -5)).item<bool>());
  Tensor m = f64({1., kNaN, -2., 0., 0., 5.}, {2, 3});
  EXPECT_EQ(argmin(m, 1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  Tensor i = testing::i64({3, 1, 1, 0, 0, -5}, {2, 3});
  EXPECT_EQ(argmin(i).item<int64_t>(), 5);
  Tensor k = argmin(i, 0, true);
  EXPECT_EQ(k.sizes(), (IntList{1, 3}));
  EXPECT_EQ(k.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_THROW(argmin(zeros({0})), std::invalid_argument);
  // Not differentiable: the results never require grad.
  Tensor x = sample().requires_grad_();
  EXPECT_FALSE(all(x).requires_grad());
  EXPECT_FALSE(argmin(x, 1).requires_grad());
}

TEST(NormOp, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({3, 4}, 1), testing::leaf({4}, 2)};
      },
      [](const testing::TensorList& a) {
        Tensor x = a[0] * 2.0;
        Tensor keep = to(any(gt(x, 0.5), 1, true), x.dtype());
        return testing::TensorList{norm(x, 2, {1}) + norm(a[1]), norm(x, 1, {0}, true) * keep.sum(),
                                   norm(x, std::numeric_limits<double>::infinity(), {1}),
                                   to(all(gt(a[1], -10)), DType::f32) + norm(x, 3, {})};
      });
}

}  // namespace
}  // namespace aotgrad
