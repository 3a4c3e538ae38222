// Double backward through the rows whose backward is its own row (convolution, pooling, softmax,
// losses): second derivatives against PyTorch 1.13 on the classic use, a WGAN-GP gradient
// penalty, and gradgradcheck of the variants the op-table sweep does not reach (transposed,
// grouped and strided convolutions).
#include <gtest/gtest.h>

#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"
#include "testing/gradgradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::autograd::grad;
using ag::testing::allclose;

namespace {

// ((i * mul) % mod - off) / div for i in [0, numel): the same values the PyTorch script builds.
Tensor seq(const ag::IntList& sizes, int64_t mul, int64_t mod, int64_t off, double div) {
  std::vector<double> v(static_cast<size_t>(ag::numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((static_cast<int64_t>(i) * mul) % mod - off) / div;
  return ag::from_vector(v, sizes);
}

}  // namespace

// Values from PyTorch 1.13 (f64), produced by:
//   real = seq(32, 7, 11, 5, 5).view(2, 1, 4, 4); fake = seq(32, 3, 13, 6, 4).view(2, 1, 4, 4)
//   alpha = [0.25, 0.6].view(2, 1, 1, 1); xh = (alpha * real + (1 - alpha) * fake).requires_grad_()
//   cw = seq(18, 5, 7, 3, 4).view(2, 1, 3, 3); cb = [0.1, -0.2]; lw = seq(8, 3, 5, 2, 3).view(1, 8)
//   d = linear(max_pool2d(leaky_relu(conv2d(xh, cw, cb, padding=1), 0.2), 2).flatten(1), lw, 0.05)
//   g, = autograd.grad(d.sum(), xh, create_graph=True)
//   pen = ((g.flatten(1).norm(2, dim=1) - 1) ** 2).mean(); autograd.grad(pen, [cw, cb, lw])
TEST(DoubleBackward, WganGradientPenaltyOfAConvCriticMatchesPyTorch) {
  Tensor real = seq({2, 1, 4, 4}, 7, 11, 5, 5), fake = seq({2, 1, 4, 4}, 3, 13, 6, 4);
  Tensor alpha = ag::testing::f64({0.25, 0.6}, {2, 1, 1, 1});
  Tensor cw = seq({2, 1, 3, 3}, 5, 7, 3, 4).requires_grad_();
  Tensor cb = ag::testing::f64({0.1, -0.2}, {2}).requires_grad_();
  Tensor lw = seq({1, 8}, 3, 5, 2, 3).requires_grad_();
  Tensor lb = ag::testing::f64({0.05}, {1}).requires_grad_();
  Tensor xh = (alpha * real + (1.0 - alpha) * fake).requires_grad_();
  Tensor h = ag::leaky_relu(ag::conv2d(xh, cw, cb, {1}, {1}), 0.2);
  Tensor d = ag::linear(ag::max_pool2d(h, {2, 2}).flatten(1), lw, lb);
  Tensor g = grad({d.sum()}, {xh}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor norms = ag::norm(g.flatten(1), ag::Scalar(2), {1});
  Tensor penalty = ((norms - 1.0).pow(2)).mean();
  EXPECT_NEAR(penalty.item<double>(), 0.456879685346545, 1e-12);
  std::vector<Tensor> grads = grad({penalty}, {cw, cb, lw, lb}, {}, std::nullopt, false, true);
  EXPECT_TRUE(allclose(
      grads[0],
      ag::testing::f64(
          {-0.41749015302, 0.583522507114, 0.194732536711, -0.434946231122, 0.736746955301,
           0.319377583194, -0.284827769729, -0.270044137229, 0.106129906633, 0.127751033278,
           0.104468210414, -0.0813786370111, 0.12153905969, -0.0121111868973, -0.377570022072,
           0.262628164797, 0.155655331963, -0.246641803548},
          {2, 1, 3, 3}),
      1e-9, 1e-9));
  // The biases shift only which side of leaky_relu / which window maximum is taken.
  EXPECT_TRUE(!grads[1].defined() || allclose(grads[1], ag::zeros({2}, ag::DType::f64), 0, 0));
  EXPECT_TRUE(
      allclose(grads[2],
               ag::testing::f64({-0.636544869587, 0.927273440244, -0.592972056405, 1.27567477433,
                                 0.0496764014719, -0.556369596373, 0.32046842779, 0.0593366823133},
                                {1, 8}),
               1e-9, 1e-9));
  EXPECT_FALSE(grads[3].defined());
}

TEST(DoubleBackward, GroupedStridedDilatedConvolutionHasCorrectSecondDerivatives) {
  Tensor x = ag::testing::test_input({1, 4, 5, 5}, -1, 1, 1);
  Tensor w = ag::testing::test_input({2, 2, 2, 2}, -1, 1, 2);
  Tensor b = ag::testing::test_input({2}, -1, 1, 3);
  auto fn = [](const std::vector<Tensor>& in) {
    return ag::conv2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {2, 1}, /*groups=*/2);
  };
  EXPECT_TRUE(ag::testing::gradgradcheck(fn, {x, w, b}));
}

TEST(DoubleBackward, TransposedConvolutionHasCorrectSecondDerivatives) {
  Tensor x = ag::testing::test_input({1, 2, 3, 3}, -1, 1, 1);
  Tensor w = ag::testing::test_input({2, 2, 3, 2}, -1, 1, 2);  // [C_in, O / groups, kH, kW]
  Tensor b = ag::testing::test_input({4}, -1, 1, 3);
  auto fn = [](const std::vector<Tensor>& in) {
    return ag::conv_transpose2d(in[0], in[1], in[2], {2, 2}, {1, 0}, {1, 1}, /*groups=*/2);
  };
  EXPECT_TRUE(ag::testing::gradgradcheck(fn, {x, w, b}));
}

TEST(DoubleBackward, ConvolutionWithAFrozenWeightDifferentiatesTheInputTwice) {
  // Only the input requires grad: the first backward asks convolution_backward for the input
  // gradient alone, and the second must still reach the input through the weight's path.
  Tensor x = ag::testing::test_input({1, 1, 4, 4}, -1, 1, 1);
  Tensor w = ag::testing::test_input({1, 1, 3, 3}, -1, 1, 2, /*requires_grad=*/false);
  auto fn = [&](const std::vector<Tensor>& in) {
    return ag::conv2d(in[0], w, Tensor(), {1}, {1}).tanh();
  };
  EXPECT_TRUE(ag::testing::gradgradcheck(fn, {x}));
}

// Values from PyTorch 1.13 (f64), produced by:
//   z = seq(12, 5, 7, 3, 2).view(3, 4).requires_grad_(); t = [1, 0, 3]
//   y = seq(12, 3, 5, 2, 3).view(3, 4)
//   loss = cross_entropy(z, t) + mse_loss(softmax(z, 1), y)
//   g, = autograd.grad(loss, z, create_graph=True); pen = (g * g).sum(); autograd.grad(pen, z)
// (through _log_softmax_backward_data, nll_loss_backward, _softmax_backward_data and
// mse_loss_backward).
TEST(DoubleBackward, SquaredGradientOfSoftmaxLossesMatchesPyTorch) {
  Tensor z = seq({3, 4}, 5, 7, 3, 2).requires_grad_();
  Tensor t = ag::from_vector(std::vector<int64_t>{1, 0, 3}, {3});
  Tensor y = seq({3, 4}, 3, 5, 2, 3);
  Tensor loss = ag::cross_entropy(z, t) + ag::mse_loss(ag::softmax(z, 1), y);
  Tensor g = grad({loss}, {z}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor penalty = (g * g).sum();
  EXPECT_NEAR(penalty.item<double>(), 0.07608171600587024, 1e-14);
  Tensor h = grad({penalty}, {z})[0];
  EXPECT_TRUE(allclose(
      h,
      ag::testing::f64({0.00348153641707, -0.0348889466689, 0.028587791591, 0.00281961866083,
                        -0.033620147755, 0.0294383430317, 0.00286051931936, 0.00132128540397,
                        0.0300768695587, 0.00854108859516, 0.00293235755784, -0.0415503157117},
                       {3, 4}),
      1e-10, 1e-9));
}

// Values from PyTorch 1.13 (f64), produced by:
//   x = seq(12, 5, 7, 3, 2).view(3, 4); lw = seq(4, 3, 5, 2, 3); lb = seq(4, 2, 3, 1, 4)
//   bw = seq(4, 4, 7, 2, 3); bb = seq(4, 1, 5, 2, 5); rm = [0.1, -0.2, 0.3, 0]; rv = [1.5, 0.5, 2,
//   1] h = batch_norm(tanh(layer_norm(x, [4], lw, lb)), None, None, bw, bb, training=True) h =
//   batch_norm(h * h, rm, rv, bw, bb, training=False) out = (h * seq(12, 7, 11, 5, 5).view(3,
//   4)).sum() g, = autograd.grad(out, x, create_graph=True); pen = (g * g).sum() autograd.grad(pen,
//   [x, lw, lb, bw, bb])
TEST(DoubleBackward, LayerNormAndBatchNormSecondDerivativesMatchPyTorch) {
  Tensor x = seq({3, 4}, 5, 7, 3, 2).requires_grad_();
  Tensor lw = seq({4}, 3, 5, 2, 3).requires_grad_(), lb = seq({4}, 2, 3, 1, 4).requires_grad_();
  Tensor bw = seq({4}, 4, 7, 2, 3).requires_grad_(), bb = seq({4}, 1, 5, 2, 5).requires_grad_();
  Tensor rm = ag::testing::f64({0.1, -0.2, 0.3, 0.0}, {4}),
         rv = ag::testing::f64({1.5, 0.5, 2.0, 1.0}, {4});
  Tensor h = ag::tanh(ag::layer_norm(x, {4}, lw, lb));
  h = ag::batch_norm(h, bw, bb, Tensor(), Tensor(), /*training=*/true, 0.1, 1e-5);
  h = ag::batch_norm(h * h, bw, bb, rm, rv, /*training=*/false, 0.1, 1e-5);
  Tensor out = (h * seq({3, 4}, 7, 11, 5, 5)).sum();
  Tensor g = grad({out}, {x}, {}, std::nullopt, /*create_graph=*/true)[0];
  Tensor penalty = (g * g).sum();
  EXPECT_NEAR(penalty.item<double>(), 0.10464676904618483, 1e-12);
  std::vector<Tensor> grads = grad({penalty}, {x, lw, lb, bw, bb});
  const std::vector<std::vector<double>> expected = {
      {0.0289989324544, 0.0286982323038, -0.0528033419653, -0.00489382279296, 0.170112232257,
       -0.384239474279, 0.126348794508, 0.0877784475147, -0.119840904042, 0.337210813335,
       -0.151320628244, -0.0660492810486},
      {0.0252588325699, -0.177413279317, 0.00304026068357, 0.000816906459428},
      {0.0298614904095, -0.0981326538219, -0.0029503105125, -0.000159543117026},
      {-0.117752039323, 0.632430255791, -0.0159866090104, 3.05730577822e-05},
      {0.0664040034607, -0.74492534958, 0.0387573608227, -0.000119135294075}};
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_TRUE(allclose(grads[i], ag::testing::f64(expected[i], grads[i].sizes()), 1e-9, 1e-9))
        << i;
}

TEST(DoubleBackward, NormalizationVariantsHaveCorrectSecondDerivatives) {
  Tensor x = ag::testing::test_input({2, 3, 2}, -1, 1, 1);
  Tensor w = ag::testing::test_input({3}, 0.5, 1.5, 2);
  Tensor stat = ag::testing::test_input({3}, 0.5, 1.5, 3, /*requires_grad=*/false);
  // Layer norm over two dims without affine parameters.
  EXPECT_TRUE(ag::testing::gradgradcheck(
      [](const std::vector<Tensor>& in) {
        return ag::layer_norm(in[0], {3, 2});
      },
      {x}));
  // Batch norm in eval mode (constant running statistics) and in training without a bias.
  EXPECT_TRUE(ag::testing::gradgradcheck(
      [&](const std::vector<Tensor>& in) {
        return ag::batch_norm(in[0], in[1], Tensor(), stat, stat, false, 0.1, 1e-5);
      },
      {x, w}));
  EXPECT_TRUE(ag::testing::gradgradcheck(
      [&](const std::vector<Tensor>& in) {
        return ag::batch_norm(in[0], in[1], Tensor(), Tensor(), Tensor(), true, 0.1, 1e-5);
      },
      {x, w}));
}

// In-place ops on views of a non-leaf (CopySlices), differentiated twice. Values from PyTorch
// 1.13 (f64), produced by:
//   x = [[0.5, -1, 2], [1.5, 0.25, -0.75]]; x2 = [1.25, -0.5, 2]; y = x.clone()
//   v = y[:, 1:3]; v.mul_(x2[:2]); v.div_(x2[1:] + 3); y.select(0, 1).mul_(x[0].exp())
//   out = (y * y * y).sum(); gx, gx2 = autograd.grad(out, [x, x2], create_graph=True)
//   pen = (gx * gx).sum() + (gx2 * gx2).sum(); autograd.grad(pen, [x, x2])
TEST(DoubleBackward, InPlaceOpsOnViewsDifferentiateTwiceAsPyTorch) {
  Tensor x = ag::testing::f64({0.5, -1.0, 2.0, 1.5, 0.25, -0.75}, {2, 3}).requires_grad_();
  Tensor x2 = ag::testing::f64({1.25, -0.5, 2.0}, {3}).requires_grad_();
  Tensor y = x.clone();
  Tensor v = y.slice(1, 1, 3);
  v.mul_(x2.slice(0, 0, 2));
  v.div_(x2.slice(0, 1, 3) + 3.0);
  y.select(0, 1).mul_(x.select(0, 0).exp());
  Tensor out = (y * y * y).sum();
  EXPECT_NEAR(out.item<double>(), 15.287994375013623, 1e-12);
  std::vector<Tensor> g = grad({out}, {x, x2}, {}, std::nullopt, /*create_graph=*/true);
  Tensor penalty = (g[0] * g[0]).sum() + (g[1] * g[1]).sum();
  EXPECT_NEAR(penalty.item<double>(), 3044.4868532673627, 1e-9);
  std::vector<Tensor> h = grad({penalty}, {x, x2});
  EXPECT_TRUE(allclose(h[0],
                       ag::testing::f64({18326.3314525, -0.36072954765, 9.28036635158,
                                         10812.8495262, 0.00327597041954, -11.3137987727},
                                        {2, 3}),
                       1e-9, 1e-9));
  EXPECT_TRUE(allclose(
      h[1], ag::testing::f64({0.371297370796, -15.2269169582, -1.83108392572}, {3}), 1e-9, 1e-9));
}

TEST(DoubleBackward, InPlaceOpOnAStridedViewHasCorrectSecondDerivatives) {
  Tensor x = ag::testing::test_input({3, 4}, -1, 1, 1);
  Tensor s = ag::testing::test_input({3, 2}, -1, 1, 2);
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = in[0] * 1.5;
    y.slice(1, 0, 4, 2).mul_(in[1].tanh());  // every other column
    return y * y;
  };
  EXPECT_TRUE(ag::testing::gradgradcheck(fn, {x, s}));
}
