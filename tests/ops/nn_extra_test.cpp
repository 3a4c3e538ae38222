// The LibTorch-surface ops of issue 17 (ops/nn_extra.cpp): leaky_relu (and leaky_relu_,
// leaky_relu_backward), binary_cross_entropy (with and without logits), smooth_l1_loss,
// huber_loss, l1_loss. Values and gradients against PyTorch 1.13 (numbers pasted from torch,
// branch points included: x == 0 for leaky_relu, |x - t| == beta, probabilities 0 and 1),
// errors, finite-difference gradients of the forward and the backward ops (double backward) and
// compiled == eager under every partitioner.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::f64;
using testing::gradcheck;
using V = std::vector<double>;

Tensor call_row(const char* name, ops::OpArgs args) {
  return ops::call1(ops::lookup(name), std::move(args));
}

void expect_values(const Tensor& got, const V& want, double tol = 1e-14) {
  std::vector<double> g = got.to_vector<double>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i)
    EXPECT_NEAR(g[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

template <typename F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing: " << needle;
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

Tensor leaf(const Tensor& t) {
  return t.detach().requires_grad_();
}

TEST(NnExtraLeakyRelu, ValuesAndGradientsMatchPyTorch) {
  Tensor x = leaf(f64({-2.0, -0.0, 0.0, 1.5}, {4}));
  Tensor y = leaky_relu(x, 0.2);
  expect_values(y, {-0.4, -0.0, 0.0, 1.5});
  y.sum().backward();
  // At x == 0 PyTorch takes the negative slope.
  expect_values(x.grad(), {0.2, 0.2, 0.2, 1.0});
  expect_values(leaky_relu(f64({-100.0, 3.0}, {2})), {-1.0, 3.0});  // default slope 0.01
  expect_error([] { leaky_relu(testing::i64({1, -2}, {2})); }, "must be a floating tensor");
}

TEST(NnExtraLeakyRelu, InPlaceFormDifferentiatesFromItsResult) {
  Tensor base = f64({-2.0, 0.0, 1.5, -0.5}, {4});
  Tensor t = base.clone();
  Tensor& r = leaky_relu_(t, 0.3);
  EXPECT_EQ(&r, &t);
  expect_values(t, {-0.6, 0.0, 1.5, -0.15});
  Tensor w = leaf(base);
  Tensor y = w * 2.0;
  leaky_relu_(y, 0.3);
  (y * y).sum().backward();
  Tensor w2 = leaf(base);
  (leaky_relu(w2 * 2.0, 0.3) * leaky_relu(w2 * 2.0, 0.3)).sum().backward();
  EXPECT_TRUE(testing::allclose(w.grad(), w2.grad(), 1e-14, 1e-14));
  // A negative slope cannot be undone from the result: the backward refuses, as PyTorch's.
  Tensor v = leaf(base);
  Tensor z = v * 1.0;
  leaky_relu_(z, -0.2);
  expect_error([&] { z.sum().backward(); }, "negative slope");
  Tensor l = leaf(base);
  EXPECT_THROW(leaky_relu_(l), std::exception);
}

TEST(NnExtraLeakyRelu, GradcheckForwardAndBackwardOp) {
  Tensor x = leaf(f64({-4.2, -2.5, -0.7, -0.2, 0.3, 0.8, 1.7, 2.9}, {2, 4}));
  EXPECT_TRUE(gradcheck([](const std::vector<Tensor>& in) { return leaky_relu(in[0], 0.1); }, {x}));
  Tensor g = leaf(testing::test_input({2, 4}, -1, 1, 7));
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return call_row("aten.leaky_relu_backward.default", {in[0], in[1], Scalar(0.1), false});
      },
      {g, x}));
}

// PyTorch 1.13: probabilities at 0 and 1 (log clamped at -100), target gradients unclamped.
TEST(NnExtraBce, BoundaryValuesAndGradientsMatchPyTorch) {
  Tensor x = leaf(f64({0.0, 1e-50, 0.3, 1.0, 0.999999}, {5}));
  Tensor t = leaf(f64({0.0, 1.0, 0.4, 0.0, 1.0}, {5}));
  Tensor l = binary_cross_entropy(x, t, Tensor(), "none");
  expect_values(l, {0.0, 100.0, 0.695594088093614, 100.0, 1.000000500029089e-06}, 1e-9);
  l.sum().backward();
  expect_values(
      x.grad(),
      {0.0, -1000000003995.8029, -0.4761904761904764, 1000000003995.8029, -1.000001000001}, 1e-9);
  std::vector<double> gt = t.grad().to_vector<double>();
  EXPECT_TRUE(std::isinf(gt[0]) && gt[0] > 0);
  EXPECT_TRUE(std::isinf(gt[3]) && gt[3] < 0);
  EXPECT_NEAR(gt[1], 115.12925464970229, 1e-9);
  EXPECT_NEAR(gt[2], 0.8472978603872037, 1e-12);
}

TEST(NnExtraBce, WeightedMeanMatchesPyTorch) {
  Tensor x = leaf(f64({0.1, 0.5, 0.9, 0.3, 0.7, 0.2}, {2, 3}));
  Tensor t = leaf(f64({0.0, 1.0, 0.25, 1.0, 0.0, 0.5}, {2, 3}));
  Tensor w = f64({1.0, 2.0, 0.5}, {3});
  Tensor l = binary_cross_entropy(x, t, w);
  expect_values(l, {1.0730596883370997});
  l.backward();
  expect_values(x.grad(), {0.18518518518518515, -0.6666666666666666, 0.601851851851852,
                           -0.5555555555555555, 1.111111111111111, -0.15624999999999997});
  expect_values(t.grad(), {0.36620409622270317, 0.0, -0.18310204811135164, 0.14121631006453395,
                           -0.28243262012906784, 0.11552453009332421});
}

TEST(NnExtraBce, Errors) {
  expect_error([] { binary_cross_entropy(f64({1.5}, {1}), f64({1.0}, {1})); },
               "must be between 0 and 1");
  expect_error(
      [] {
        binary_cross_entropy(f64({0.5, 0.5}, {2}), f64({1.0}, {1}));
      },
      "give them the same shape");
  expect_error([] { binary_cross_entropy(f64({0.5}, {1}), f64({1.0}, {1}), Tensor(), "avg"); },
               "reduction must be");
  Tensor w = leaf(f64({2.0}, {1}));
  expect_error([&] { binary_cross_entropy(leaf(f64({0.5}, {1})), f64({1.0}, {1}), w).backward(); },
               "not differentiable with respect to weight");
}

TEST(NnExtraBceWithLogits, ValuesAndGradientsMatchPyTorch) {
  const Tensor z0 = f64({0.0, -2.0, 3.0, 40.0, -40.0, 0.5}, {2, 3});
  const Tensor t0 = f64({0.0, 1.0, 0.25, 1.0, 0.0, 0.5}, {2, 3});
  const Tensor w = f64({1.0, 2.0, 0.5}, {3}), pw = f64({2.0, 0.5, 1.5}, {3});
  {
    Tensor z = leaf(z0), t = leaf(t0);
    Tensor l = binary_cross_entropy_with_logits(z, t);
    expect_values(l, {0.9737899212261277});
    l.backward();
    expect_values(z.grad(), {0.08333333333333333, -0.14679951299631375, 0.1170956878037389, 0.0,
                             7.080590425485981e-19, 0.020409888533642433});
    expect_values(t.grad(), {-0.0, 0.3333333333333333, -0.5, -6.666666666666667, 6.666666666666667,
                             -0.08333333333333333});
  }
  {
    Tensor z = leaf(z0), t = leaf(t0);
    Tensor l = binary_cross_entropy_with_logits(z, t, w, pw, "sum");
    expect_values(l, {4.393703691975714});
    l.backward();
    expect_values(z.grad(), {0.5, -0.8807970779778824, 0.34832294633761873, 0.0,
                             8.496708510583178e-18, 0.014037082001159107});
    expect_values(t.grad(), {0.6931471805599453, 1.8730719889570278, -1.4878531621065645, -40.0,
                             40.0, -0.13148075395497333});
  }
  expect_values(
      binary_cross_entropy_with_logits(z0, t0, Tensor(), pw, "none"),
      {0.6931471805599453, 1.0634640055214863, 2.3046607705204596, 0.0, 0.0, 0.8425962302251333});
  expect_error(
      [&] { binary_cross_entropy_with_logits(leaf(z0), t0, Tensor(), leaf(pw)).backward(); },
      "not differentiable with respect to pos_weight");
}

TEST(NnExtraRobustLosses, BranchPointsMatchPyTorch) {
  const Tensor x0 = f64({0.0, 0.5, 1.0, -1.0, 2.0}, {5});
  const Tensor y = zeros({5}, DType::f64);
  struct Case {
    bool smooth;
    double param;
    V loss, grad;
  };
  const Case cases[] = {
      {true, 1.0, {0.0, 0.125, 0.5, 0.5, 1.5}, {0.0, 0.5, 1.0, -1.0, 1.0}},
      {true, 0.5, {0.0, 0.25, 0.75, 0.75, 1.75}, {0.0, 1.0, 1.0, -1.0, 1.0}},
      // beta == 0: the L1 loss, and a zero difference takes -grad (ATen tests x <= -beta first).
      {true, 0.0, {0.0, 0.5, 1.0, 1.0, 2.0}, {-1.0, 1.0, 1.0, -1.0, 1.0}},
      {false, 1.0, {0.0, 0.125, 0.5, 0.5, 1.5}, {0.0, 0.5, 1.0, -1.0, 1.0}},
      {false, 0.5, {0.0, 0.125, 0.375, 0.375, 0.875}, {0.0, 0.5, 0.5, -0.5, 0.5}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.smooth ? "smooth_l1 " : "huber ") + std::to_string(c.param));
    Tensor x = leaf(x0);
    Tensor l = c.smooth ? smooth_l1_loss(x, y, "none", c.param) : huber_loss(x, y, "none", c.param);
    expect_values(l, c.loss);
    l.sum().backward();
    expect_values(x.grad(), c.grad);
  }
  Tensor x = leaf(x0);
  l1_loss(x, y, "none").sum().backward();
  expect_values(x.grad(), {0.0, 1.0, 1.0, -1.0, 1.0});
  expect_values(l1_loss(x0, y), {0.9});
  expect_error([&] { huber_loss(x0, y, "mean", 0.0); }, "delta must be > 0");
  expect_error([&] { smooth_l1_loss(x0, y, "mean", -1.0); }, "beta must be >= 0");
  expect_error([&] { smooth_l1_loss(x0, f64({1, 2}, {2})); }, "must broadcast");
}

TEST(NnExtraLosses, GradcheckEveryReduction) {
  Tensor p = leaf(testing::test_input({2, 3}, 0.1, 0.9, 3));
  Tensor z = leaf(testing::test_input({2, 3}, -3, 3, 4));
  Tensor t = leaf(testing::test_input({2, 3}, 0.05, 0.95, 5));
  Tensor y = leaf(testing::test_input({3}, -2, 2, 6));
  // weight and pos_weight are not differentiable (as in PyTorch): constants here.
  const Tensor w = testing::test_input({3}, 0.5, 2, 7, false);
  const Tensor pw = testing::test_input({3}, 0.5, 3, 8, false);
  for (const char* red : {"mean", "sum", "none"}) {
    SCOPED_TRACE(red);
    const std::string r = red;
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return binary_cross_entropy(in[0], in[1], w, r); },
        {p, t}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], w, pw, r);
        },
        {z, t}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return binary_cross_entropy_with_logits(in[0], in[1], Tensor(), Tensor(), r);
        },
        {z, t}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return smooth_l1_loss(in[0], in[1], r, 1.5); },
        {z, y}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) { return huber_loss(in[0], in[1], r, 0.7); }, {z, y}));
  }
}

TEST(NnExtraLosses, BackwardOpsAreDifferentiable) {
  Tensor g = leaf(testing::test_input({2, 3}, -1, 1, 9));
  Tensor g0 = leaf(f64({0.7}, {}));
  Tensor p = leaf(testing::test_input({2, 3}, 0.1, 0.9, 3));
  Tensor t = leaf(testing::test_input({2, 3}, 0.05, 0.95, 5));
  Tensor z = leaf(testing::test_input({2, 3}, -3, 3, 4));
  const Tensor w = testing::test_input({3}, 0.5, 2, 7, false);
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return call_row("aten.binary_cross_entropy_backward.default",
                        {in[0], in[1], in[2], w, int64_t{0}});
      },
      {g, p, t}));
  EXPECT_TRUE(gradcheck(
      [&](const std::vector<Tensor>& in) {
        return call_row("aten.binary_cross_entropy_backward.default",
                        {in[0], in[1], in[2], std::monostate{}, int64_t{1}});
      },
      {g0, p, t}));
  for (const char* row :
       {"aten.smooth_l1_loss_backward.default", "aten.huber_loss_backward.default"}) {
    SCOPED_TRACE(row);
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return call_row(row, {in[0], in[1], in[2], int64_t{0}, 1.5});
        },
        {g, z, t}));
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return call_row(row, {in[0], in[1], in[2], int64_t{2}, 0.8});
        },
        {g0, z, t}));
  }
}

TEST(NnExtraLosses, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({3, 4}, 1), testing::leaf({3, 4}, 2),
                                   testing::leaf({4}, 3, /*requires_grad=*/false)};
      },
      [](const testing::TensorList& a) {
        Tensor p = sigmoid(a[0]), t = sigmoid(a[1]);
        Tensor w = abs(a[2]) + 0.5;
        return testing::TensorList{
            binary_cross_entropy(p, t, w) + binary_cross_entropy_with_logits(a[0], t, w, w),
            smooth_l1_loss(a[0], a[1], "sum", 0.5) * huber_loss(a[0], a[2], "mean", 0.3),
            leaky_relu(a[0], 0.2) + l1_loss(a[1], a[2], "none"),
            binary_cross_entropy(p, t, Tensor(), "none")};
      });
  testing::run_scenario(
      [] {
        return testing::nonleaf_setup({2, 5}, 3);
      },
      [](const testing::TensorList& a) {
        Tensor x = a[0] * 3.0;
        leaky_relu_(x, 0.1);
        return testing::TensorList{x};
      });
}

}  // namespace
}  // namespace aotgrad
