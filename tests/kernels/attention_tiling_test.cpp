// The fused attention kernels' tiling (kernels/attention.cpp): blocks of the [T, S] scores that
// the mask leaves empty are skipped. Sequences long enough to be tiled (T >= 64: strips of 16
// rows, blocks of 64 or more), against the eager composite, forward and all three gradients, for
// masks of every shape of emptiness, and for the non-finite operands under which skipping would
// change a value (0 times inf is NaN in the composite), where the kernel must compute every block.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "kernels/attention.h"
#include "testing/attention.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::attention_composite;
using ag::testing::test_input;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A [t, s] mask, true (masked out) where `masked(i, j)`.
Tensor mask_of(int64_t t, int64_t s, const std::function<bool(int64_t, int64_t)>& masked) {
  std::vector<bool> m(static_cast<size_t>(t * s));
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < s; ++j) m[static_cast<size_t>(i * s + j)] = masked(i, j);
  return ag::from_vector(m, {t, s});
}

// Equal NaN positions, equal infinities, the finite values within tol.
::testing::AssertionResult same(const Tensor& got, const Tensor& want, double tol) {
  if (got.sizes() != want.sizes()) return ::testing::AssertionFailure() << "shapes differ";
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  size_t nan = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i]) || std::isnan(g[i])) {
      if (std::isnan(w[i]) != std::isnan(g[i]))
        return ::testing::AssertionFailure()
               << "element " << i << ": got " << g[i] << ", the composite " << w[i];
      ++nan;
      continue;
    }
    if (std::isinf(w[i]) || std::isinf(g[i])) {
      if (g[i] != w[i])
        return ::testing::AssertionFailure()
               << "element " << i << ": got " << g[i] << ", the composite " << w[i];
      continue;
    }
    if (!(std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]))))
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << g[i] << ", the composite " << w[i];
  }
  return ::testing::AssertionSuccess() << nan << " NaN";
}

struct Case {
  Tensor q, k, v, grad_out, mask;
  double scale = 0.125;
};

// The kernels against the composite: the output, then {dq, dk, dv} for `grad_out`.
void expect_like_the_composite(const Case& c, double tol) {
  Tensor q = c.q.detach().requires_grad_(), k = c.k.detach().requires_grad_(),
         v = c.v.detach().requires_grad_();
  Tensor want = attention_composite(q, k, v, c.mask, c.scale);
  want.backward(c.grad_out);
  Tensor got = ag::kernels::masked_attention(c.q, c.k, c.v, c.mask, c.scale);
  EXPECT_TRUE(same(got, want, tol)) << "output";
  std::array<Tensor, 3> grads = ag::kernels::masked_attention_backward(
      c.grad_out, c.q, c.k, c.v, c.mask, c.scale, {true, true, true});
  EXPECT_TRUE(same(grads[0], q.grad(), tol)) << "dq";
  EXPECT_TRUE(same(grads[1], k.grad(), tol)) << "dk";
  EXPECT_TRUE(same(grads[2], v.grad(), tol)) << "dv";
  // Each gradient alone takes the same path.
  const Tensor want_grad[3] = {q.grad(), k.grad(), v.grad()};
  for (size_t only = 0; only < 3; ++only) {
    std::array<bool, 3> need{};
    need[only] = true;
    std::array<Tensor, 3> one =
        ag::kernels::masked_attention_backward(c.grad_out, c.q, c.k, c.v, c.mask, c.scale, need);
    for (size_t i = 0; i < 3; ++i) EXPECT_EQ(one[i].defined(), i == only);
    EXPECT_TRUE(same(one[only], want_grad[only], tol)) << "gradient " << only << " alone";
  }
  // The output from the backward's weights (the cpp backend's attention pair) is the forward's.
  std::array<Tensor, 4> both = ag::kernels::masked_attention_with_backward(
      c.grad_out, c.q, c.k, c.v, c.mask, c.scale, {true, false, true});
  EXPECT_TRUE(same(both[3], want, tol)) << "output with the backward";
  EXPECT_TRUE(same(both[2], v.grad(), tol)) << "dv with the output";
}

Case make_case(ag::DType dtype, int64_t b, int64_t t, int64_t s, Tensor mask, uint64_t seed = 1) {
  Case c;
  c.q = test_input({b, 2, t, 16}, -1, 1, seed, false).to(dtype);
  c.k = test_input({b, 2, s, 16}, -1, 1, seed + 1, false).to(dtype);
  c.v = test_input({b, 2, s, 8}, -1, 1, seed + 2, false).to(dtype);
  c.grad_out = test_input({b, 2, t, 8}, -1, 1, seed + 3, false).to(dtype);
  c.mask = std::move(mask);
  return c;
}

// Sets element `at` (flat, of a contiguous tensor) of `t` to `value`.
Tensor with(const Tensor& t, int64_t at, double value) {
  std::vector<double> x = t.to_vector<double>();
  x[static_cast<size_t>(at)] = value;
  return ag::from_vector(x, t.sizes()).to(t.dtype());
}

const auto causal = [](int64_t i, int64_t j) { return j > i; };

}  // namespace

TEST(AttentionTiling, MasksOfEveryShapeMatchTheComposite) {
  const std::vector<std::pair<const char*, std::function<bool(int64_t, int64_t)>>> masks = {
      {"causal", causal},
      {"band of 20", [](int64_t i, int64_t j) { return j > i || i - j > 20; }},
      {"keys from 70 padded", [](int64_t, int64_t j) { return j >= 70; }},
      {"queries 40-109 see nothing",
       [](int64_t i, int64_t j) { return (i >= 40 && i < 110) || j > i; }},
      {"one fully masked row", [](int64_t i, int64_t j) { return i == 37 || j > i; }},
      {"every other key", [](int64_t, int64_t j) { return j % 2 == 1; }},
  };
  for (ag::DType dtype : {ag::DType::f64, ag::DType::f32}) {
    const double tol = dtype == ag::DType::f64 ? 1e-12 : 2e-5;
    for (const auto& [name, masked] : masks)
      for (auto [t, s] :
           {std::pair<int64_t, int64_t>{128, 128}, {136, 200}, {200, 90}, {64, 64}, {72, 50}}) {
        SCOPED_TRACE(std::string(ag::dtype_name(dtype)) + ", " + name + ", T " + std::to_string(t) +
                     ", S " + std::to_string(s));
        expect_like_the_composite(make_case(dtype, 2, t, s, mask_of(t, s, masked)), tol);
      }
  }
}

TEST(AttentionTiling, KeysNobodyAttendsGetExactlyZeroGradients) {
  Case c = make_case(ag::DType::f32, 1, 128, 128,
                     mask_of(128, 128, [](int64_t i, int64_t j) { return j >= 60 || j > i; }));
  expect_like_the_composite(c, 2e-5);
  std::array<Tensor, 3> g = ag::kernels::masked_attention_backward(
      c.grad_out, c.q, c.k, c.v, c.mask, c.scale, {true, true, true});
  for (size_t which : {size_t{1}, size_t{2}}) {
    std::vector<float> x = g[which].to_vector<float>();
    const int64_t cols = g[which].size(-1);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t j = 60; j < 128; ++j)
        for (int64_t d = 0; d < cols; ++d)
          EXPECT_EQ(x[static_cast<size_t>((h * 128 + j) * cols + d)], 0.0f) << which << " " << j;
  }
}

TEST(AttentionTiling, PerBatchMasksEachTheirOwn) {
  // [2, 1, T, S]: batch entry 0 causal, entry 1 a band; the heads share their entry's mask.
  const int64_t t = 128;
  Tensor m0 = mask_of(t, t, causal),
         m1 = mask_of(t, t, [](int64_t i, int64_t j) { return j > i || i - j > 10; });
  Tensor mask = ag::stack({m0, m1}, 0).unsqueeze(1);
  for (ag::DType dtype : {ag::DType::f64, ag::DType::f32})
    expect_like_the_composite(make_case(dtype, 2, t, t, mask, 5),
                              dtype == ag::DType::f64 ? 1e-12 : 2e-5);
}

// Skipping a block is exact only when 0 times each skipped operand is 0: with an infinite or
// NaN operand (any of q, k, v or the output gradient), or an overflowing score whose NaN row the
// composite spreads to every key's gradient, the kernel must give the composite's NaNs.
TEST(AttentionTiling, NonFiniteOperandsGiveTheCompositesNans) {
  const int64_t t = 128;
  for (ag::DType dtype : {ag::DType::f64, ag::DType::f32}) {
    const double tol = dtype == ag::DType::f64 ? 1e-12 : 2e-5;
    const Case base = make_case(dtype, 1, t, t, mask_of(t, t, causal), 9);
    for (double bad : {kInf, -kInf, std::nan("")}) {
      SCOPED_TRACE(std::string(ag::dtype_name(dtype)) + ", " + std::to_string(bad));
      // The last key's value: masked for every row but the last (0 * inf in the composite).
      Case c = base;
      c.v = with(c.v, (t - 1) * 8 + 3, bad);
      expect_like_the_composite(c, tol);
      // The last key: masked for every row but the last, so only dq's 0 * k sees it.
      c = base;
      c.k = with(c.k, (t - 1) * 16 + 5, bad);
      expect_like_the_composite(c, tol);
      // The first query: it attends one key only; dk's 0 * q sees it for every other key.
      c = base;
      c.q = with(c.q, 2, bad);
      expect_like_the_composite(c, tol);
      // The output gradient of the first row: dp = grad_out @ v^T for its masked keys.
      c = base;
      c.grad_out = with(c.grad_out, 1, bad);
      expect_like_the_composite(c, tol);
    }
    // Finite operands whose product overflows at a masked key: dp = grad_out @ v^T is inf at
    // (0, 127), and the composite's softmax backward sums dp * p (0 there) over the whole row.
    if (dtype == ag::DType::f32) {
      Case c = base;
      std::vector<double> g = c.grad_out.to_vector<double>(), v = c.v.to_vector<double>();
      for (int64_t d = 0; d < 8; ++d) {
        g[static_cast<size_t>(d)] = 1e20;
        v[static_cast<size_t>(127 * 8 + d)] = 1e20;
      }
      c.grad_out = ag::from_vector(g, c.grad_out.sizes()).to(dtype);
      c.v = ag::from_vector(v, c.v.sizes()).to(dtype);
      expect_like_the_composite(c, tol);
    }
    // A score overflowing to inf in row 20 (f32; f64 holds it) makes the row's weights NaN:
    // every key's dv then gets NaN in the composite, the keys past the row's block included.
    Case c = base;
    std::vector<double> q = c.q.to_vector<double>(), k = c.k.to_vector<double>();
    for (int64_t d = 0; d < 16; ++d) {
      q[static_cast<size_t>(20 * 16 + d)] = 1e30;
      k[static_cast<size_t>(10 * 16 + d)] = 1e30;
    }
    c.q = ag::from_vector(q, c.q.sizes()).to(dtype);
    c.k = ag::from_vector(k, c.k.sizes()).to(dtype);
    expect_like_the_composite(c, tol);
  }
}

// Masks read through every layout: transposed (a column stride), one row for all queries (a key
// padding mask, [S]), one column for all keys ([T, 1]); and scales of every sign.
TEST(AttentionTiling, MaskLayoutsAndScales) {
  const int64_t t = 128, s = 160;
  const Tensor transposed = mask_of(s, t, [](int64_t j, int64_t i) { return j > i + 20; }).t();
  ASSERT_FALSE(transposed.is_contiguous());
  std::vector<bool> keys(static_cast<size_t>(s));
  for (int64_t j = 0; j < s; ++j) keys[static_cast<size_t>(j)] = j >= 90;
  std::vector<bool> rows(static_cast<size_t>(t));
  for (int64_t i = 0; i < t; ++i) rows[static_cast<size_t>(i)] = i % 50 == 7;
  const Tensor masks[] = {transposed, ag::from_vector(keys, {s}), ag::from_vector(rows, {t, 1})};
  for (ag::DType dtype : {ag::DType::f64, ag::DType::f32})
    for (const Tensor& mask : masks)
      for (double scale : {0.3, -0.7, 0.0, 1e39}) {
        SCOPED_TRACE(std::string(ag::dtype_name(dtype)) + ", mask " +
                     ag::shape_to_string(mask.sizes()) + ", scale " + std::to_string(scale));
        Case c = make_case(dtype, 1, t, s, mask, 70);
        c.scale = scale;
        expect_like_the_composite(c, dtype == ag::DType::f64 ? 1e-12 : 2e-5);
      }
}

TEST(AttentionTiling, NonFiniteScaleAndStridedHeads) {
  // q, k, v as strided heads of one projection, as the transformer block has them.
  const int64_t b = 2, t = 128, h = 2, d = 16;
  Tensor qkv = test_input({b, t, 3 * h * d}, -1, 1, 21, false).to(ag::DType::f32);
  std::vector<Tensor> parts = ag::split(qkv, h * d, 2);
  Case c;
  c.q = parts[0].reshape({b, t, h, d}).transpose(1, 2);
  c.k = parts[1].reshape({b, t, h, d}).transpose(1, 2);
  c.v = parts[2].reshape({b, t, h, d}).transpose(1, 2);
  c.grad_out = test_input({b, h, t, d}, -1, 1, 22, false).to(ag::DType::f32);
  c.mask = mask_of(t, t, causal);
  expect_like_the_composite(c, 2e-5);
  for (double scale : {kInf, std::nan("")}) {
    c.scale = scale;
    expect_like_the_composite(c, 2e-5);
  }
}

// Random masks: per-row windows (some empty: fully masked rows), scattered holes, and whole
// blocks of rows or keys masked, at random sizes around the tiling's thresholds (most rounds
// tiled, a few not).
TEST(AttentionTiling, RandomMasksMatchTheComposite) {
  uint64_t state = 0x9e3779b97f4a7c15ULL;
  const auto next = [&](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  for (int round = 0; round < 12; ++round) {
    const int64_t t = 120 + static_cast<int64_t>(next(90)),
                  s = 60 + static_cast<int64_t>(next(150));
    std::vector<int64_t> lo(static_cast<size_t>(t)), hi(static_cast<size_t>(t));
    for (int64_t i = 0; i < t; ++i) {
      // A window sliding down the keys with the row, jittered; now and then empty.
      lo[static_cast<size_t>(i)] = std::max<int64_t>(0, i * s / t - static_cast<int64_t>(next(16)));
      hi[static_cast<size_t>(i)] =
          lo[static_cast<size_t>(i)] + static_cast<int64_t>(next(static_cast<uint64_t>(s / 3)));
    }
    const uint64_t kind = next(3), hole = 2 + next(9);
    const int64_t row_cut = static_cast<int64_t>(next(static_cast<uint64_t>(t)));
    Tensor mask = mask_of(t, s, [&](int64_t i, int64_t j) {
      if (kind == 0) return j < lo[static_cast<size_t>(i)] || j >= hi[static_cast<size_t>(i)];
      if (kind == 1) return (i * 31 + j * 17) % static_cast<int64_t>(hole) == 0 || j > i + s / 3;
      return i >= row_cut ? j > i : j >= s / 2;  // the upper rows see only the first half of keys
    });
    SCOPED_TRACE("round " + std::to_string(round) + ": T " + std::to_string(t) + ", S " +
                 std::to_string(s) + ", kind " + std::to_string(kind));
    expect_like_the_composite(make_case(ag::DType::f64, 1, t, s, mask, 40 + round), 1e-12);
  }
}
