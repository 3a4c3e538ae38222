// The f32 row kernels of kernels/vec/rows.h, every compiled ISA target this CPU runs, against
// double references: lengths around every vector width (tails), NaN / -inf / huge logits, and the
// ops that use them (softmax, mse_loss, sum over dim 0, layer_norm) through the public API.
#include "kernels/vec/rows.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using kernels::vec::row_kernel_targets;
using kernels::vec::RowKernels;

const int64_t kLengths[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257};

std::vector<float> inputs(int64_t n, uint64_t seed, double scale = 4.0) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 6364136223846793005ull + 1442695040888963407ull;
  for (float& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>((static_cast<double>(s >> 11) / 9007199254740992.0 - 0.5) * scale);
  }
  return v;
}

// |got - want| <= atol + rtol * |want| for each element.
void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

TEST(RowKernels, SoftmaxAndBackwardMatchDoubleOnEveryTarget) {
  ASSERT_FALSE(row_kernel_targets().empty());
  for (const RowKernels* k : row_kernel_targets()) {
    for (int64_t n : kLengths) {
      const std::string what = std::string(k->name) + " n=" + std::to_string(n);
      std::vector<float> x = inputs(n, 1, 40.0), g = inputs(n, 2);
      double mx = -INFINITY, sum = 0;
      for (float v : x) mx = std::max(mx, static_cast<double>(v));
      for (float v : x) sum += std::exp(v - mx);
      std::vector<double> soft, logsoft;
      for (float v : x) {
        soft.push_back(std::exp(v - mx) / sum);
        logsoft.push_back(v - mx - std::log(sum));
      }
      std::vector<float> y(x.size()), ly(x.size());
      k->softmax(x.data(), y.data(), n, false);
      k->softmax(x.data(), ly.data(), n, true);
      expect_near(y, soft, 1e-6, what + " softmax");
      expect_near(ly, logsoft, 1e-6, what + " log_softmax");
      // Backwards against the double formula on the kernel's own outputs.
      double dot = 0, gsum = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        dot += static_cast<double>(g[i]) * y[i];
        gsum += g[i];
      }
      std::vector<double> want_b, want_lb;
      for (size_t i = 0; i < x.size(); ++i) {
        want_b.push_back(y[i] * (g[i] - dot));
        want_lb.push_back(g[i] - std::exp(static_cast<double>(ly[i])) * gsum);
      }
      std::vector<float> r(x.size()), lr(x.size());
      k->softmax_backward(g.data(), y.data(), r.data(), n, false);
      k->softmax_backward(g.data(), ly.data(), lr.data(), n, true);
      expect_near(r, want_b, 1e-5, what + " softmax_backward");
      expect_near(lr, want_lb, 1e-5, what + " log_softmax_backward");
    }
  }
}

TEST(RowKernels, SoftmaxKeepsNanAndHandlesInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = INFINITY;
  for (const RowKernels* k : row_kernel_targets()) {
    for (int64_t n : {3, 17, 40}) {
      for (int64_t at : {int64_t{0}, n - 1}) {
        std::vector<float> x = inputs(n, 3), y(static_cast<size_t>(n));
        x[static_cast<size_t>(at)] = nan;
        k->softmax(x.data(), y.data(), n, false);
        for (float v : y) EXPECT_TRUE(std::isnan(v)) << k->name << " n=" << n << " at " << at;
        k->softmax(x.data(), y.data(), n, true);
        for (float v : y) EXPECT_TRUE(std::isnan(v)) << k->name << " log n=" << n;
      }
      // A -inf logit (a masked position) gets exactly 0; the others still sum to 1.
      std::vector<float> x = inputs(n, 4), y(static_cast<size_t>(n));
      x[1] = -inf;
      k->softmax(x.data(), y.data(), n, false);
      EXPECT_EQ(y[1], 0.0f) << k->name;
      double s = 0;
      for (float v : y) s += v;
      EXPECT_NEAR(s, 1.0, 1e-6) << k->name;
      k->softmax(x.data(), y.data(), n, true);
      EXPECT_EQ(y[1], -inf) << k->name;
      // Huge logits do not overflow.
      std::vector<float> big(static_cast<size_t>(n), 1e30f);
      k->softmax(big.data(), y.data(), n, false);
      for (float v : y) EXPECT_NEAR(v, 1.0 / static_cast<double>(n), 1e-6) << k->name;
    }
  }
}

TEST(RowKernels, SumsMomentsAndLossesMatchDouble) {
  for (const RowKernels* k : row_kernel_targets()) {
    for (int64_t n : kLengths) {
      const std::string what = std::string(k->name) + " n=" + std::to_string(n);
      // An offset far from zero: a one-pass E[x^2] - E[x]^2 would lose every digit here.
      std::vector<float> a = inputs(n, 5), b = inputs(n, 6), g = inputs(n, 7);
      for (float& v : a) v += 1000.0f;
      double sum = 0, sq = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        sum += a[i];
        const double d = static_cast<double>(a[i] - b[i]);
        sq += d * d;
      }
      EXPECT_NEAR(k->sum(a.data(), n), sum, 1e-9 * std::abs(sum)) << what;
      float mx = -INFINITY;
      for (float v : b) mx = std::max(mx, v);
      EXPECT_EQ(k->max(b.data(), n), mx) << what;
      std::vector<float> with_nan = b;
      with_nan[static_cast<size_t>(n) / 2] = std::numeric_limits<float>::quiet_NaN();
      EXPECT_TRUE(std::isnan(k->max(with_nan.data(), n))) << what;
      EXPECT_NEAR(k->squared_distance(a.data(), b.data(), n), sq, 1e-9 * sq) << what;
      const double mean = sum / static_cast<double>(n);
      double m2 = 0;
      for (float v : a) m2 += (v - mean) * (v - mean);
      double got_mean = 0, got_m2 = 0;
      k->moments(a.data(), n, &got_mean, &got_m2);
      EXPECT_NEAR(got_mean, mean, 1e-12 * std::abs(mean)) << what;
      EXPECT_NEAR(got_m2, m2, 1e-9 * m2 + 1e-12) << what;
      // Six rows of a [6, n + 3] matrix: a block of four and two single rows.
      const int64_t stride = n + 3;
      const std::vector<float> m = inputs(6 * stride, 10);
      std::vector<double> acc(a.size(), 0.5);
      k->add_rows(acc.data(), m.data(), stride, 6, n);
      for (size_t i = 0; i < a.size(); ++i) {
        double want = 0.5;
        for (int64_t r = 0; r < 6; ++r) want += m[static_cast<size_t>(r * stride) + i];
        EXPECT_EQ(acc[i], want) << what;
      }
      std::vector<float> out(a.size());
      std::vector<double> want;
      for (size_t i = 0; i < a.size(); ++i) want.push_back(0.25 * (a[i] - b[i]) * g[i]);
      k->scaled_difference(a.data(), b.data(), g.data(), 1, 0.25f, out.data(), n);
      expect_near(out, want, 1e-6, what + " scaled_difference");
      want.clear();
      for (size_t i = 0; i < a.size(); ++i) want.push_back(0.25 * (a[i] - b[i]) * g[0]);
      k->scaled_difference(a.data(), b.data(), g.data(), 0, 0.25f, out.data(), n);
      expect_near(out, want, 1e-6, what + " scaled_difference, one g");
      const std::vector<float> w = inputs(n, 8), bias = inputs(n, 9);
      const float mu = static_cast<float>(mean), rs = 0.5f;
      k->normalize(a.data(), mu, rs, w.data(), bias.data(), out.data(), n);
      want.clear();
      for (size_t i = 0; i < a.size(); ++i)
        want.push_back(static_cast<double>((a[i] - mu) * rs) * w[i] + bias[i]);
      expect_near(out, want, 1e-6, what + " normalize");
      k->normalize(a.data(), mu, rs, nullptr, nullptr, out.data(), n);
      want.clear();
      for (size_t i = 0; i < a.size(); ++i) want.push_back((a[i] - mu) * rs);
      expect_near(out, want, 1e-6, what + " normalize, no affine");
    }
  }
}

TEST(RowKernels, MaxOfNothingIsMinusInfinity) {
  for (const RowKernels* k : row_kernel_targets()) EXPECT_EQ(k->max(nullptr, 0), -INFINITY);
}

TEST(RowKernels, LayerNormBackwardMatchesDouble) {
  for (const RowKernels* k : row_kernel_targets()) {
    for (int64_t n : kLengths) {
      const std::string what = std::string(k->name) + " n=" + std::to_string(n);
      const std::vector<float> g = inputs(n, 11), x = inputs(n, 12), w = inputs(n, 13);
      const float mean = 0.1f, rstd = 1.7f;
      double c1 = 0, c2 = 0;
      std::vector<double> xhat;
      for (size_t i = 0; i < x.size(); ++i) {
        xhat.push_back((static_cast<double>(x[i]) - mean) * rstd);
        c1 += static_cast<double>(g[i]) * w[i];
        c2 += static_cast<double>(g[i]) * w[i] * xhat.back();
      }
      c1 /= static_cast<double>(n);
      c2 /= static_cast<double>(n);
      std::vector<double> want_dx, want_pw, want_pb;
      for (size_t i = 0; i < x.size(); ++i) {
        want_dx.push_back(rstd * (static_cast<double>(g[i]) * w[i] - c1 - xhat[i] * c2));
        want_pw.push_back(1.0 + g[i] * xhat[i]);
        want_pb.push_back(2.0 + g[i]);
      }
      std::vector<float> dx(x.size()), pw(x.size(), 1.0f), pb(x.size(), 2.0f);
      k->layer_norm_backward(g.data(), x.data(), mean, rstd, w.data(), dx.data(), pw.data(),
                             pb.data(), n);
      expect_near(dx, want_dx, 1e-5, what + " dx");
      expect_near(pw, want_pw, 1e-6, what + " pw");
      expect_near(pb, want_pb, 1e-6, what + " pb");
    }
  }
}

// The ops route f32 through the kernels: same values as in f64, to f32 accuracy.
TEST(RowKernels, OpsAgreeWithTheirF64Results) {
  const Tensor x = testing::test_input({6, 3, 37}, -3, 3, 1, false);
  const Tensor t = testing::test_input({6, 3, 37}, -3, 3, 2, false);
  const Tensor xf = x.to(DType::f32), tf = t.to(DType::f32);
  EXPECT_TRUE(testing::allclose(softmax(xf, -1).to(DType::f64), softmax(x, -1), 1e-6, 1e-5));
  EXPECT_TRUE(
      testing::allclose(log_softmax(xf, -1).to(DType::f64), log_softmax(x, -1), 1e-5, 1e-5));
  EXPECT_TRUE(testing::allclose(sum(xf, {0}).to(DType::f64), sum(x, {0}), 1e-5, 1e-5));
  EXPECT_TRUE(testing::allclose(sum(xf, {2}).to(DType::f64), sum(x, {2}), 1e-5, 1e-5));
  EXPECT_TRUE(testing::allclose(amax(xf, {2}).to(DType::f64), amax(x, {2}), 1e-6, 1e-6));
  EXPECT_TRUE(testing::allclose(mse_loss(xf, tf).to(DType::f64), mse_loss(x, t), 1e-5, 1e-5));
  EXPECT_TRUE(
      testing::allclose(layer_norm(xf, {37}).to(DType::f64), layer_norm(x, {37}), 1e-5, 1e-4));
  // Sum over the batch dim of a [64, 300] matrix: the column path, rows blocked by four.
  const Tensor c = testing::test_input({64, 300}, -3, 3, 3, false);
  EXPECT_TRUE(
      testing::allclose(sum(c.to(DType::f32), {0}).to(DType::f64), sum(c, {0}), 1e-4, 1e-5));
}

}  // namespace
}  // namespace aotgrad
