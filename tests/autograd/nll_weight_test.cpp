// nll_loss / cross_entropy with class weights and ignore_index: the loss, its gradient and its
// second derivative (nll_loss_backward's VJP), through the ops, the loss modules' options and
// the LibTorch spelling, against PyTorch 1.13.
#include <gtest/gtest.h>

#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn/functional.h"
#include "aotgrad/nn/loss.h"
#include "aotgrad/torch/functions.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;

namespace {

// ((i * mul) % mod - off) / div for i in [0, numel): the same values the PyTorch script builds.
Tensor seq(const ag::IntList& sizes, int64_t mul, int64_t mod, int64_t off, double div) {
  std::vector<double> v(static_cast<size_t>(ag::numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((static_cast<int64_t>(i) * mul) % mod - off) / div;
  return ag::from_vector(v, sizes);
}

Tensor classes(std::vector<int64_t> v, ag::IntList sizes) {
  return ag::from_vector(v, sizes);
}

}  // namespace

// Values from PyTorch 1.13 (f64), produced by:
//   z = seq(12, 5, 7, 3, 2).view(4, 3); t = [0, 2, 1, 2]; w = [0.5, 2.0, 1.5]
//   F.cross_entropy(z, t, weight=w, ignore_index=1, reduction=...) for mean, sum and none
//   g, = autograd.grad(F.cross_entropy(z, t, weight=w, ignore_index=1), z, create_graph=True)
//   pen = (g * g).sum(); autograd.grad(pen, z)
TEST(NllLossWeight, ClassWeightsAndIgnoreIndexMatchPyTorchToTheSecondDerivative) {
  Tensor z = seq({4, 3}, 5, 7, 3, 2).requires_grad_();
  Tensor t = classes({0, 2, 1, 2}, {4});
  Tensor w = ag::testing::f64({0.5, 2.0, 1.5}, {3});
  EXPECT_NEAR(ag::cross_entropy(z, t, "mean", w, 1).item<double>(), 1.11217997526, 1e-10);
  EXPECT_NEAR(ag::cross_entropy(z, t, "sum", w, 1).item<double>(), 3.89262991342, 1e-10);
  EXPECT_TRUE(allclose(ag::cross_entropy(z, t, "none", w, 1),
                       ag::testing::f64({1.43576951593, 2.05730854778, 0.0, 0.399551849711}, {4}),
                       1e-10, 1e-10));
  Tensor loss = ag::cross_entropy(z, t, "mean", w, 1);
  Tensor g = ag::autograd::grad({loss}, {z}, {}, std::nullopt, /*create_graph=*/true)[0];
  EXPECT_TRUE(allclose(g,
                       ag::testing::f64({-0.134769752537, 0.0985245837321, 0.036245168805,
                                         0.0242621709602, 0.295573751196, -0.319835922156, 0.0, 0.0,
                                         0.0, 0.0732654772276, 0.0269528628197, -0.100218340047},
                                        {4, 3}),
                       1e-10, 1e-10));
  Tensor penalty = (g * g).sum();
  EXPECT_NEAR(penalty.item<double>(), 0.23556920714713597, 1e-12);
  EXPECT_TRUE(allclose(
      ag::autograd::grad({penalty}, {z})[0],
      ag::testing::f64(
          {-0.0033042787214, 0.00571609916801, -0.00241182044661, -0.00484334894251, 0.101381093785,
           -0.0965377448424, 0.0, 0.0, 0.0, 0.0199030764883, 0.0048254175702, -0.0247284940585},
          {4, 3}),
      1e-10, 1e-10));
}

TEST(NllLossWeight, ModulesFunctionalAndLibTorchSpellingsTakeTheOptions) {
  Tensor z = seq({4, 3}, 5, 7, 3, 2);
  Tensor t = classes({0, 2, 1, 2}, {4});
  Tensor w = ag::testing::f64({0.5, 2.0, 1.5}, {3});
  ag::nn::CrossEntropyLoss ce(ag::nn::CrossEntropyLossOptions().weight(w).ignore_index(1));
  EXPECT_NEAR(ce(z, t).item<double>(), 1.11217997526, 1e-10);
  Tensor log_probs = ag::log_softmax(z, 1);
  ag::nn::NLLLoss nll(ag::nn::NLLLossOptions(ag::kSum).weight(w).ignore_index(1));
  EXPECT_NEAR(nll(log_probs, t).item<double>(), 3.89262991342, 1e-10);
  namespace F = ag::nn::functional;
  EXPECT_NEAR(
      F::nll_loss(log_probs, t, F::NLLLossFuncOptions().weight(w).ignore_index(1)).item<double>(),
      1.11217997526, 1e-10);
  EXPECT_NEAR(ag::nll_loss(log_probs, t, w, /*Reduction::Mean*/ 1, 1).item<double>(), 1.11217997526,
              1e-10);
  // [N, C, d]: z3 = seq(12, 3, 7, 3, 2).view(2, 3, 2); t3 = [[2, 0], [1, 2]]
  //   F.nll_loss(z3, t3, weight=w, ignore_index=0) -> -0.6
  Tensor z3 = seq({2, 3, 2}, 3, 7, 3, 2);
  EXPECT_NEAR(ag::nll_loss(z3, classes({2, 0, 1, 2}, {2, 2}), "mean", w, 0).item<double>(), -0.6,
              1e-12);
}
