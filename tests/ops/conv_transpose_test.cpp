// Transposed convolution (aten.convolution with transposed = true, conv_transpose1d / 2d) and
// channel-wise dropout (feature_dropout / dropout2d). The transposed convolution is checked
// against a direct scatter loop written here (each input element adds weight * x to the output
// window it maps to), for strides, padding, output_padding, dilation and groups, in f64 and f32
// (oneDNN's path); then finite-difference gradients of input, weight and bias, errors, and
// compiled == eager under every partitioner.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::gradcheck;
using testing::test_input;

struct Params {
  int64_t stride_h, stride_w, pad_h, pad_w, out_pad_h, out_pad_w, dil_h, dil_w, groups;
};

// out[n, o, y * s - p + ky * d, ...] += x[n, c, y, x] * w[c, o % Og, ky, kx] for o in c's group.
Tensor reference(const Tensor& x, const Tensor& w, const Tensor& b, const Params& p) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t Og = w.size(1), kH = w.size(2), kW = w.size(3), G = p.groups, Cg = C / G;
  const int64_t oH = (H - 1) * p.stride_h - 2 * p.pad_h + p.dil_h * (kH - 1) + p.out_pad_h + 1;
  const int64_t oW = (W - 1) * p.stride_w - 2 * p.pad_w + p.dil_w * (kW - 1) + p.out_pad_w + 1;
  std::vector<double> xv = to(x, DType::f64).contiguous().to_vector<double>();
  std::vector<double> wv = to(w, DType::f64).contiguous().to_vector<double>();
  std::vector<double> out(static_cast<size_t>(N * Og * G * oH * oW), 0.0);
  auto at = [&](int64_t n, int64_t o, int64_t y, int64_t xx) -> double& {
    return out[static_cast<size_t>(((n * Og * G + o) * oH + y) * oW + xx)];
  };
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xx = 0; xx < W; ++xx)
          for (int64_t og = 0; og < Og; ++og)
            for (int64_t ky = 0; ky < kH; ++ky)
              for (int64_t kx = 0; kx < kW; ++kx) {
                const int64_t oy = y * p.stride_h - p.pad_h + ky * p.dil_h;
                const int64_t ox = xx * p.stride_w - p.pad_w + kx * p.dil_w;
                if (oy < 0 || oy >= oH || ox < 0 || ox >= oW) continue;
                at(n, (c / Cg) * Og + og, oy, ox) +=
                    xv[static_cast<size_t>(((n * C + c) * H + y) * W + xx)] *
                    wv[static_cast<size_t>(((c * Og + og) * kH + ky) * kW + kx)];
              }
  if (b.defined()) {
    std::vector<double> bv = to(b, DType::f64).to_vector<double>();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < Og * G; ++o)
        for (int64_t y = 0; y < oH; ++y)
          for (int64_t xx = 0; xx < oW; ++xx) at(n, o, y, xx) += bv[static_cast<size_t>(o)];
  }
  return from_vector(out, {N, Og * G, oH, oW});
}

Tensor run(const Tensor& x, const Tensor& w, const Tensor& b, const Params& p) {
  return conv_transpose2d(x, w, b, {p.stride_h, p.stride_w}, {p.pad_h, p.pad_w},
                          {p.out_pad_h, p.out_pad_w}, p.groups, {p.dil_h, p.dil_w});
}

const Params kCases[] = {
    {1, 1, 0, 0, 0, 0, 1, 1, 1},  // plain
    {2, 2, 1, 1, 1, 1, 1, 1, 1},  // the DCGAN upsampling layer's shape of parameters
    {2, 3, 0, 1, 1, 2, 1, 1, 1},  // unequal strides and output paddings
    {1, 2, 1, 0, 0, 1, 2, 3, 1},  // dilation
    {2, 1, 1, 1, 0, 0, 1, 2, 2},  // groups
};

TEST(ConvTranspose, MatchesAScatterLoop) {
  for (const Params& p : kCases) {
    SCOPED_TRACE("stride " + std::to_string(p.stride_h) + "x" + std::to_string(p.stride_w) +
                 " groups " + std::to_string(p.groups));
    const int64_t C = 4, Og = 3;
    Tensor x = test_input({2, C, 4, 5}, -1, 1, 1);
    Tensor w = test_input({C, Og, 3, 2}, -1, 1, 2);
    Tensor b = test_input({Og * p.groups}, -1, 1, 3);
    Tensor want = reference(x, w, b, p);
    EXPECT_TRUE(allclose(run(x, w, b, p), want, 1e-12, 1e-12));
    EXPECT_TRUE(allclose(run(x, w, Tensor(), p), reference(x, w, Tensor(), p), 1e-12, 1e-12));
    // f32 takes oneDNN's backward-data primitive.
    Tensor got32 = run(to(x, DType::f32), to(w, DType::f32), to(b, DType::f32), p);
    EXPECT_EQ(got32.dtype(), DType::f32);
    EXPECT_TRUE(allclose(to(got32, DType::f64), want, 1e-5, 1e-5));
  }
}

TEST(ConvTranspose, OneDimensionalAndUnbatched) {
  Tensor x = test_input({2, 4, 6}, -1, 1, 4);
  Tensor w = test_input({4, 3, 3}, -1, 1, 5);
  Tensor b = test_input({3}, -1, 1, 6);
  Tensor y = conv_transpose1d(x, w, b, {2}, {1}, {1}, 1, {2});
  EXPECT_EQ(y.sizes(), (IntList{2, 3, 14}));  // (6 - 1) 2 - 2 + 2 (3 - 1) + 1 + 1
  Params p{1, 2, 0, 1, 0, 1, 1, 2, 1};
  Tensor want = reference(unsqueeze(x, 2), unsqueeze(w, 2), b, p);
  EXPECT_TRUE(allclose(y, squeeze(want, 2), 1e-12, 1e-12));
  Tensor y3 = conv_transpose2d(select(unsqueeze(x, 2), 0, 1), unsqueeze(w, 2), b, {1, 2}, {0, 1},
                               {0, 1}, 1, {1, 2});
  EXPECT_TRUE(allclose(y3, select(want, 0, 1), 1e-12, 1e-12));
}

TEST(ConvTranspose, Gradcheck) {
  const Params p{2, 1, 1, 0, 1, 0, 1, 2, 2};
  Tensor x = test_input({1, 4, 3, 3}, -1, 1, 7).requires_grad_();
  Tensor w = test_input({4, 2, 2, 3}, -1, 1, 8).requires_grad_();
  Tensor b = test_input({4}, -1, 1, 9).requires_grad_();
  EXPECT_TRUE(gradcheck([&](const std::vector<Tensor>& in) { return run(in[0], in[1], in[2], p); },
                        {x, w, b}));
  Tensor x1 = test_input({2, 2, 5}, -1, 1, 10).requires_grad_();
  Tensor w1 = test_input({2, 3, 3}, -1, 1, 11).requires_grad_();
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return conv_transpose1d(in[0], in[1], Tensor(), {3}, {2}, {2});
      },
      {x1, w1}));
  // f32 gradients (oneDNN forward and backward-weights) agree with f64's.
  Tensor xf = to(x.detach(), DType::f32).requires_grad_();
  Tensor wf = to(w.detach(), DType::f32).requires_grad_();
  run(xf, wf, Tensor(), p).sum().backward();
  run(x, w, Tensor(), p).sum().backward();
  EXPECT_TRUE(allclose(to(xf.grad(), DType::f64), x.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(allclose(to(wf.grad(), DType::f64), w.grad(), 1e-5, 1e-5));
}

TEST(ConvTranspose, Errors) {
  Tensor x = test_input({1, 4, 3, 3}, -1, 1, 1);
  Tensor w = test_input({4, 2, 3, 3}, -1, 1, 2);
  auto expect_error = [](auto f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected " << needle;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([&] { conv_transpose2d(x, w, Tensor(), {2}, {0}, {2}); }, "smaller than the stride");
  expect_error([&] { conv_transpose2d(x, test_input({3, 2, 3, 3}, -1, 1, 3)); }, "input channels");
  expect_error([&] { conv_transpose2d(x, w, test_input({3}, -1, 1, 4)); }, "bias must have shape");
  expect_error([&] { conv_transpose2d(x, w, Tensor(), {1}, {3}); }, "use a smaller padding");
  expect_error([&] { conv_transpose1d(x, w); }, "conv_transpose1d");
}

TEST(ConvTranspose, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({2, 4, 3, 3}, 1), testing::leaf({4, 3, 4, 4}, 2),
                                   testing::leaf({3}, 3), testing::leaf({2, 4, 5}, 4),
                                   testing::leaf({4, 2, 3}, 5)};
      },
      [](const testing::TensorList& a) {
        Tensor y = conv_transpose2d(a[0], a[1], a[2], {2}, {1});
        Tensor z = conv_transpose1d(a[3], a[4], Tensor(), {2}, {0}, {1}, 2);
        return testing::TensorList{tanh(y), z * 2.0};
      });
}

TEST(FeatureDropout, DropsWholeChannelsAndScales) {
  manual_seed(5);
  Tensor x = add(zeros({4, 8, 3, 3}), 1.0);
  Tensor y = dropout2d(x, 0.25);
  std::vector<float> v = y.to_vector<float>();
  int dropped = 0;
  for (int64_t c = 0; c < 32; ++c) {
    const float first = v[static_cast<size_t>(c * 9)];
    EXPECT_TRUE(first == 0.0f || std::abs(first - 1.0f / 0.75f) < 1e-6f) << first;
    for (int64_t k = 1; k < 9; ++k) EXPECT_EQ(v[static_cast<size_t>(c * 9 + k)], first);
    dropped += first == 0.0f;
  }
  EXPECT_GT(dropped, 0);
  EXPECT_LT(dropped, 32);
  // Eval mode and p == 0 return the input itself; p == 1 zeroes everything.
  EXPECT_TRUE(dropout2d(x, 0.5, false).is_same(x));
  EXPECT_TRUE(feature_dropout(x, 0.0, true).is_same(x));
  EXPECT_EQ(sum(feature_dropout(x, 1.0, true)).item<float>(), 0.0f);
  EXPECT_THROW(feature_dropout(x, 1.5, true), std::invalid_argument);
  EXPECT_THROW(feature_dropout(zeros({3}), 0.5, true), std::invalid_argument);
  // The gradient flows through the kept channels only, scaled like the values.
  Tensor w = test_input({2, 6, 2}, -1, 1, 3).requires_grad_();
  manual_seed(9);
  Tensor out = feature_dropout(w, 0.5, true);
  out.sum().backward();
  EXPECT_TRUE(allclose(w.grad(), div(out.detach(), w.detach()), 1e-12, 1e-12));
}

// The mask comes from rand, which traces into a philox node: compiled calls draw the channels
// eager draws from the same seed, under both partitioners, and min_cut draws the mask again in
// the backward instead of saving it.
std::vector<Tensor> dropout_block(const Tensor& x, const Tensor& w) {
  return {sum(mul(dropout2d(tanh(mul(x, w)), 0.4), 2.0))};
}

std::vector<Tensor> run_dropout_block(
    const std::function<std::vector<Tensor>(const Tensor&, const Tensor&)>& fn) {
  Tensor x = test_input({3, 6, 4, 4}, -1, 1, 5);
  Tensor w = test_input({6, 1, 1}, -1, 1, 6);
  manual_seed(77);
  Tensor out = fn(x, w)[0];
  out.backward();
  return {out.detach(), x.grad(), w.grad()};
}

TEST(FeatureDropout, CompiledDrawsTheSameChannelsAsEager) {
  const std::vector<Tensor> eager = run_dropout_block(dropout_block);
  for (const char* partitioner : {"default", "min_cut"}) {
    AotConfig config;
    config.partitioner = partitioner;
    if (const char* compiler = std::getenv("AOTGRAD_TEST_COMPILER"); compiler && *compiler)
      config.fw_compiler = compiler;
    auto compiled = aot_function(dropout_block, config);
    const std::vector<Tensor> comp = run_dropout_block(compiled);
    // A different mask would differ by whole channels; the tolerance only admits the cpp
    // backend's vectorized tanh.
    for (size_t k = 0; k < eager.size(); ++k)
      EXPECT_TRUE(allclose(comp[k], eager[k], 1e-12, 1e-12)) << partitioner << ": value " << k;
    if (std::string(partitioner) == "min_cut") {
      EXPECT_NE(compiled.graphs().backward.find("aotgrad.philox_rand"), std::string::npos)
          << compiled.graphs().backward;
    }
  }
}

}  // namespace
}  // namespace aotgrad
