// Neural-network ops: softmax / log_softmax (stability, dims, strided inputs), nll_loss
// (reductions, weight, ignore_index, bad targets), cross_entropy, mse_loss — values against hand
// computation and finite-difference gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::f64;
using testing::gradcheck;
using testing::i64;
using testing::test_input;

Tensor f32(std::vector<float> v, const IntList& sizes) {
  return from_vector(v, sizes);
}
// nll_loss_forward with every argument spelled out; returns {output, total_weight}.
std::vector<Tensor> nll_forward(const Tensor& x, const Tensor& target, const Tensor& weight,
                                int64_t reduction, int64_t ignore_index = -100) {
  ops::Arg w = weight.defined() ? ops::Arg(weight) : ops::Arg(std::monostate{});
  return ops::dispatch(ops::lookup("aten.nll_loss_forward.default"),
                       {x, target, w, reduction, ignore_index});
}

TEST(NNSoftmax, Values) {
  Tensor x = f32({1, 2, 3}, {3});
  EXPECT_TRUE(allclose(softmax(x, 0), f32({0.09003057f, 0.24472847f, 0.66524096f}, {3}), 1e-7));
  EXPECT_TRUE(
      allclose(log_softmax(x, -1), f32({-2.40760596f, -1.40760596f, -0.40760596f}, {3}), 1e-6));
  Tensor m = f32({1, 2, 3, 4}, {2, 2});
  EXPECT_TRUE(allclose(softmax(m, 0),
                       f32({0.11920292f, 0.11920292f, 0.88079708f, 0.88079708f}, {2, 2}), 1e-7));
  EXPECT_TRUE(allclose(softmax(m, 1),
                       f32({0.26894142f, 0.73105858f, 0.26894142f, 0.73105858f}, {2, 2}), 1e-7));
}

TEST(NNSoftmax, StableForLargeLogits) {
  Tensor big = f32({1000, 1001, 1002, -1000, -1001, -1002}, {2, 3});
  Tensor s = softmax(big, 1);
  EXPECT_TRUE(allclose(
      s,
      f32({0.09003057f, 0.24472847f, 0.66524096f, 0.66524096f, 0.24472847f, 0.09003057f}, {2, 3}),
      1e-7));
  Tensor l = log_softmax(big, 1);
  EXPECT_TRUE(allclose(
      l,
      f32({-2.40760596f, -1.40760596f, -0.40760596f, -0.40760596f, -1.40760596f, -2.40760596f},
          {2, 3}),
      1e-5));
}

TEST(NNSoftmax, EveryDimOfStridedInput) {
  Tensor x = test_input({3, 4, 5}, -3, 3, 1, false);
  Tensor xt = make_view(x, {5, 4, 3}, {1, 5, 20}, 0);  // permute(2, 1, 0)
  for (int64_t dim = 0; dim < 3; ++dim) {
    Tensor s = softmax(xt, dim);
    Tensor ref = softmax(contiguous(xt), dim);
    EXPECT_TRUE(allclose(s, ref, 1e-15, 1e-14));
    EXPECT_TRUE(allclose(sum(s, {dim}), ones_like(sum(s, {dim})).to(DType::f64), 1e-14));
    EXPECT_TRUE(allclose(log_softmax(xt, dim - 3), log(s), 1e-14, 1e-12));
  }
}

TEST(NNSoftmax, LargeParallelInput) {
  Tensor x = test_input({300, 200}, -5, 5, 2, false).to(DType::f32);
  Tensor s = softmax(x, 0);
  EXPECT_TRUE(allclose(sum(s, {0}), ones({200}), 1e-5));
  Tensor l = log_softmax(x, 1);
  EXPECT_TRUE(allclose(l, log(softmax(x, 1)), 1e-5, 1e-5));
}

TEST(NNSoftmax, RejectsIntegersAndBadDims) {
  EXPECT_THROW(softmax(i64({1, 2}, {2}), 0), std::invalid_argument);
  EXPECT_THROW(softmax(f32({1, 2}, {2}), 1), std::invalid_argument);
  EXPECT_THROW(_softmax(f32({1, 2}, {2}), 0, /*half_to_float=*/true), std::invalid_argument);
}

TEST(NNSoftmax, HalfToFloat) {
  Tensor h = f32({1, 2, 3}, {3}).to(DType::f16);
  Tensor s = _softmax(h, 0, true);
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_TRUE(allclose(s, f32({0.09003057f, 0.24472847f, 0.66524096f}, {3}), 1e-6));
  EXPECT_EQ(_log_softmax(h, 0, false).dtype(), DType::f16);
}

TEST(NNSoftmaxGrad, SeveralDims) {
  for (int64_t dim : {0, 1, -1}) {
    EXPECT_TRUE(gradcheck([dim](auto& x) { return softmax(x[0], dim); }, {test_input({3, 4})}));
    EXPECT_TRUE(gradcheck([dim](auto& x) { return log_softmax(x[0], dim); }, {test_input({3, 4})}));
  }
  EXPECT_TRUE(gradcheck([](auto& x) { return softmax(x[0], 1); }, {test_input({2, 3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return log_softmax(x[0], 1); }, {test_input({2, 3, 4})}));
  EXPECT_TRUE(
      gradcheck([](auto& x) { return softmax(transpose(x[0], 0, 1), 1); }, {test_input({4, 3})}));
}

TEST(NNSoftmaxGrad, ExpandedIncomingGradient) {
  // sum's VJP hands softmax an expanded (stride 0) gradient; d/dx sum(softmax(x)) = 0.
  Tensor x = test_input({3, 4});
  softmax(x, 1).sum().backward();
  EXPECT_TRUE(allclose(x.grad(), zeros({3, 4}, DType::f64), 1e-15));
  Tensor y = test_input({3, 4});
  log_softmax(y, 1).sum().backward();
  // d/dy sum(log_softmax(y)) = 1 - 4 * softmax(y)
  EXPECT_TRUE(allclose(y.grad(), 1.0 - 4.0 * softmax(y.detach(), 1), 1e-14));
}

TEST(NNNllLoss, Reductions) {
  Tensor lp = f32({-1, -2, -3, -0.5, -1.5, -2.5}, {2, 3});
  Tensor t = i64({2, 0}, {2});
  EXPECT_EQ(nll_loss(lp, t, "none").to_vector<float>(), (std::vector<float>{3, 0.5}));
  EXPECT_EQ(nll_loss(lp, t, "sum").item<float>(), 3.5f);
  EXPECT_EQ(nll_loss(lp, t).item<float>(), 1.75f);
  EXPECT_EQ(nll_loss(lp, t).dim(), 0);
  EXPECT_THROW(nll_loss(lp, t, "avg"), std::invalid_argument);
  // A single sample: [C] log-probs with a 0-dim target.
  EXPECT_EQ(nll_loss(f32({-1, -2, -3}, {3}), i64({1}, {})).item<float>(), 2.0f);
}

TEST(NNNllLoss, WeightAndIgnoreIndex) {
  Tensor lp = f32({-1, -2, -3, -0.5, -1.5, -2.5}, {2, 3});
  Tensor t = i64({2, 0}, {2});
  Tensor w = f32({1, 2, 3}, {3});
  EXPECT_EQ(nll_forward(lp, t, w, 0)[0].to_vector<float>(), (std::vector<float>{9, 0.5}));
  EXPECT_EQ(nll_forward(lp, t, w, 2)[0].item<float>(), 9.5f);
  std::vector<Tensor> mean = nll_forward(lp, t, w, 1);
  EXPECT_EQ(mean[0].item<float>(), 2.375f);
  EXPECT_EQ(mean[1].item<float>(), 4.0f);  // total_weight
  std::vector<Tensor> ignored = nll_forward(lp, t, Tensor(), 1, /*ignore_index=*/2);
  EXPECT_EQ(ignored[0].item<float>(), 0.5f);
  EXPECT_EQ(ignored[1].item<float>(), 1.0f);
  EXPECT_EQ(nll_forward(lp, t, Tensor(), 0, 2)[0].to_vector<float>(), (std::vector<float>{0, 0.5}));
  EXPECT_TRUE(std::isnan(nll_forward(lp, i64({2, 2}, {2}), Tensor(), 1, 2)[0].item<float>()));
}

TEST(NNNllLoss, BadTargetsNameTheValue) {
  Tensor lp = f32({-1, -2, -3, -0.5, -1.5, -2.5}, {2, 3});
  try {
    nll_loss(lp, i64({0, 7}, {2}));
    FAIL() << "expected out_of_range";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("target value 7"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nll_loss(lp, i64({-1, 0}, {2})), std::out_of_range);
  EXPECT_THROW(nll_loss(lp, f32({0, 1}, {2})), std::invalid_argument);
  EXPECT_THROW(nll_loss(lp, i64({0, 1, 2}, {3})), std::invalid_argument);
  EXPECT_THROW(nll_forward(lp, i64({0, 1}, {2}), f32({1, 2}, {2}), 1), std::invalid_argument);
}

TEST(NNCrossEntropy, Values) {
  Tensor logits = f32({1, 2, 3, 3, 2, 1}, {2, 3});
  Tensor t = i64({2, 2}, {2});
  EXPECT_TRUE(
      allclose(cross_entropy(logits, t, "none"), f32({0.40760596f, 2.40760596f}, {2}), 1e-6));
  EXPECT_NEAR(cross_entropy(logits, t).item<float>(), 1.40760596f, 1e-6);
  EXPECT_NEAR(cross_entropy(f32({1, 2, 3}, {3}), i64({0}, {})).item<float>(), 2.40760596f, 1e-6);
}

TEST(NNCrossEntropy, SpatialInput) {
  // [N, C, H, W] logits with [N, H, W] targets, checked pixel by pixel.
  Tensor logits = test_input({2, 3, 2, 2}, -2, 2, 1, false);
  Tensor t = i64({0, 1, 2, 1, 2, 2, 0, 1}, {2, 2, 2});
  std::vector<double> x = logits.to_vector<double>();
  std::vector<int64_t> tv = t.to_vector<int64_t>();
  std::vector<double> expect;
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t p = 0; p < 4; ++p) {
      double lse = 0;
      for (int64_t c = 0; c < 3; ++c) lse += std::exp(x[(n * 3 + c) * 4 + p]);
      expect.push_back(std::log(lse) - x[(n * 3 + tv[n * 4 + p]) * 4 + p]);
    }
  Tensor none = cross_entropy(logits, t, "none");
  EXPECT_EQ(none.sizes(), (IntList{2, 2, 2}));
  EXPECT_TRUE(allclose(none, f64(expect, {2, 2, 2}), 1e-12));
  double total = 0;
  for (double v : expect) total += v;
  EXPECT_NEAR(cross_entropy(logits, t).item<double>(), total / 8, 1e-12);
}

TEST(NNMseLoss, Values) {
  Tensor a = f32({1, 2, 3}, {3}), b = f32({1, 0, 0}, {3});
  EXPECT_EQ(mse_loss(a, b, "none").to_vector<float>(), (std::vector<float>{0, 4, 9}));
  EXPECT_EQ(mse_loss(a, b, "sum").item<float>(), 13.0f);
  EXPECT_NEAR(mse_loss(a, b).item<float>(), 13.0f / 3, 1e-6);
  Tensor m = f32({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor bc = mse_loss(m, a, "none");
  EXPECT_EQ(bc.sizes(), (IntList{2, 3}));
  EXPECT_EQ(bc.to_vector<float>(), (std::vector<float>{0, 0, 0, 9, 9, 9}));
  EXPECT_EQ(mse_loss(m, a.to(DType::f64), "sum").dtype(), DType::f64);
  EXPECT_THROW(mse_loss(a, b, "avg"), std::invalid_argument);
  EXPECT_THROW(mse_loss(i64({1}, {1}), i64({1}, {1})), std::invalid_argument);
}

// ---- gradients ----

TEST(NNLossGrad, NllLoss) {
  Tensor t = i64({2, 0, 1, 2}, {4});
  for (std::string r : {"mean", "sum", "none"})
    EXPECT_TRUE(gradcheck([&](auto& x) { return nll_loss(x[0], t, r); }, {test_input({4, 3})}))
        << r;
  Tensor w = f64({0.5, 2.0, 1.5}, {3});
  for (int64_t r : {0, 1, 2})
    EXPECT_TRUE(gradcheck([&](auto& x) { return nll_forward(x[0], t, w, r, /*ignore=*/1)[0]; },
                          {test_input({4, 3})}))
        << r;
}

TEST(NNLossGrad, CrossEntropy) {
  Tensor t = i64({2, 0, 1, 2}, {4});
  for (std::string r : {"mean", "sum", "none"})
    EXPECT_TRUE(gradcheck([&](auto& x) { return cross_entropy(x[0], t, r); }, {test_input({4, 3})}))
        << r;
  Tensor ts = i64({0, 1, 2, 1, 2, 2, 0, 1}, {2, 2, 2});
  EXPECT_TRUE(
      gradcheck([&](auto& x) { return cross_entropy(x[0], ts); }, {test_input({2, 3, 2, 2})}));
  EXPECT_TRUE(
      gradcheck([](auto& x) { return cross_entropy(x[0], i64({1}, {})); }, {test_input({3})}));
}

TEST(NNLossGrad, MseLoss) {
  for (std::string r : {"mean", "sum", "none"}) {
    EXPECT_TRUE(gradcheck([&](auto& x) { return mse_loss(x[0], x[1], r); },
                          {test_input({3, 4}, -1, 1, 1), test_input({3, 4}, -1, 1, 2)}))
        << r;
    EXPECT_TRUE(gradcheck([&](auto& x) { return mse_loss(x[0], x[1], r); },
                          {test_input({3, 4}, -1, 1, 3), test_input({4}, -1, 1, 4)}))
        << r << " broadcast";
  }
  Tensor target = test_input({3, 4}, -1, 1, 5, false);
  EXPECT_TRUE(gradcheck([&](auto& x) { return mse_loss(x[0], target); }, {test_input({3, 4})}));
}

}  // namespace
}  // namespace aotgrad
