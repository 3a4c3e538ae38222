// The eager pointwise ops on the vector kernels: whatever the layout of the inputs (transposed,
// sliced, broadcast, a Scalar operand, f16), the elementwise engine feeds the kernel the same
// values, so each op gives exactly the bits of the best target's kernel on contiguous data; and
// across the sizes that exercise the kernels' partial tails and the engine's blocks, every
// element matches.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "kernels/activation.h"
#include "kernels/math.h"
#include "kernels/pointwise.h"
#include "kernels/vec/vec.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace vec = aotgrad::kernels::vec;
using ag::Tensor;

namespace {

std::vector<float> floats(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

// Bitwise equality, NaN included.
void expect_same_bits(const std::vector<float>& got, const std::vector<float>& want,
                      const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(0, std::memcmp(&got[i], &want[i], sizeof(float)))
        << what << " at " << i << ": " << got[i] << " vs " << want[i];
}

std::vector<float> kernel_unary(vec::UnaryFn fn, const std::vector<float>& x, float p = 0) {
  std::vector<float> y(x.size());
  vec::active().f32[fn](x.data(), y.data(), static_cast<int64_t>(x.size()), p);
  return y;
}

std::vector<float> kernel_binary(vec::BinaryFn fn, const std::vector<float>& a,
                                 const std::vector<float>& b, float p = 0) {
  std::vector<float> y(a.size());
  vec::active().f32(fn, vec::Broadcast::none)(a.data(), b.data(), y.data(),
                                              static_cast<int64_t>(a.size()), p);
  return y;
}

Tensor spread(const ag::IntList& sizes, float scale) {
  return ag::mul(ag::testing::pattern(sizes, 37, 101, ag::DType::f32), scale);
}

}  // namespace

TEST(VecEager, TransposedInputsGiveTheKernelsBits) {
  const Tensor base = spread({37, 53}, 6);  // 1961 elements: several blocks and a tail
  const Tensor x = base.t();                // gathered by the engine
  const std::vector<float> xs = floats(x);
  expect_same_bits(floats(ag::kernels::gelu(x, false)), kernel_unary(vec::UnaryFn::gelu_erf, xs),
                   "gelu");
  expect_same_bits(floats(ag::kernels::gelu(x, true)), kernel_unary(vec::UnaryFn::gelu_tanh, xs),
                   "gelu tanh");
  expect_same_bits(floats(ag::kernels::unary(ag::kernels::Unary::exp, x)),
                   kernel_unary(vec::UnaryFn::exp, xs), "exp");
  expect_same_bits(floats(ag::kernels::unary(ag::kernels::Unary::tanh, x)),
                   kernel_unary(vec::UnaryFn::tanh, xs), "tanh");
  expect_same_bits(floats(ag::kernels::pow(x, 1.7)), kernel_unary(vec::UnaryFn::pow, xs, 1.7f),
                   "pow");
  expect_same_bits(floats(ag::kernels::unary(ag::kernels::Unary::erf, x)),
                   kernel_unary(vec::UnaryFn::erf, xs), "erf");
  expect_same_bits(floats(ag::kernels::unary(ag::kernels::Unary::silu, x)),
                   kernel_unary(vec::UnaryFn::silu, xs), "silu");

  const Tensor g = spread({53, 37}, 0.5);
  const std::vector<float> gs = floats(g);
  expect_same_bits(floats(ag::kernels::gelu_backward(g, x, false)),
                   kernel_binary(vec::BinaryFn::gelu_erf_backward, gs, xs), "gelu_backward");
  expect_same_bits(floats(ag::kernels::threshold_backward(g, x, 0.25)),
                   kernel_binary(vec::BinaryFn::threshold_backward, gs, xs, 0.25f),
                   "threshold_backward");
  expect_same_bits(floats(ag::kernels::silu_backward(g, x)),
                   kernel_binary(vec::BinaryFn::silu_backward, gs, xs), "silu_backward");
  expect_same_bits(floats(ag::kernels::add(x, g, 2.5)),
                   kernel_binary(vec::BinaryFn::add, xs, gs, 2.5f), "add alpha");
}

TEST(VecEager, BroadcastAndScalarOperands) {
  const Tensor a = spread({9, 130}, 3);
  const Tensor row = spread({130}, 2);  // broadcast over the rows
  const std::vector<float> as = floats(a);
  std::vector<float> rows(as.size()), threes(as.size(), 3.0f);
  const std::vector<float> r = floats(row);
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = r[i % 130];
  expect_same_bits(floats(ag::kernels::mul(a, row)), kernel_binary(vec::BinaryFn::mul, as, rows),
                   "mul broadcast");
  expect_same_bits(floats(ag::kernels::div(a, ag::Scalar(3.0))),
                   kernel_binary(vec::BinaryFn::div, as, threes), "div scalar");
  expect_same_bits(floats(ag::kernels::sub(a, ag::Scalar(3.0), 1)),
                   kernel_binary(vec::BinaryFn::sub, as, threes, 1.0f), "sub scalar");
}

// f16 computes in f32: the values are read, computed by the kernel and rounded back.
TEST(VecEager, HalfInputsComputeInFloat) {
  const Tensor x = spread({300}, 4).to(ag::DType::f16);
  const Tensor y = ag::kernels::unary(ag::kernels::Unary::sigmoid, x);
  EXPECT_EQ(y.dtype(), ag::DType::f16);
  const std::vector<float> want = kernel_unary(vec::UnaryFn::sigmoid, floats(x));
  expect_same_bits(floats(y), floats(ag::from_vector(want, {300}).to(ag::DType::f16)), "sigmoid");
}

// Every length from 0 to a few vectors past the widest target: the kernels' tails.
TEST(VecEager, EveryTailLengthOnEveryTarget) {
  for (const vec::Target* t : vec::supported()) {
    for (int64_t n = 0; n <= 70; ++n) {
      std::vector<float> x(static_cast<size_t>(n)), y(static_cast<size_t>(n), -7.0f);
      for (int64_t i = 0; i < n; ++i) x[i] = static_cast<float>(i) * 0.37f - 9.0f;
      t->f32[vec::UnaryFn::exp](x.data(), y.data(), n, 0);
      for (int64_t i = 0; i < n; ++i) {
        const float want = std::exp(x[i]);
        EXPECT_NEAR(y[i], want, 2e-7f * want) << t->name << " n=" << n << " i=" << i;
      }
    }
  }
}

// The activations keep their relative accuracy in the tails that 1 + erf(x) and 1 / (1 + e^-x)
// rounded away (the scalar formulas gave 0 there, and gelu's backward gave 0 or -0).
TEST(VecEager, ActivationTailsKeepRelativeAccuracy) {
  const Tensor x = ag::from_vector(std::vector<double>{-10, -30, -100}, {3}).to(ag::DType::f32);
  const std::vector<float> gelu = ag::gelu(x).to_vector<float>();
  const std::vector<float> gelu_tanh = ag::gelu(x, "tanh").to_vector<float>();
  const std::vector<float> sigmoid = ag::sigmoid(x).to_vector<float>();
  // gelu(-10) = -10 Phi(-10) = -7.6198530241605e-23 (erfc, long double).
  const long double phi10 = std::erfc(10.0L / std::sqrt(2.0L)) / 2;
  EXPECT_NEAR(gelu[0], static_cast<float>(-10 * phi10), 8e-30);
  EXPECT_LT(gelu[0], 0.0f);
  // sigmoid(-30) = 9.357622e-14, sigmoid(-100) = 3.72e-44 (subnormal).
  EXPECT_NEAR(sigmoid[1], static_cast<float>(std::exp(-30.0L) / (1 + std::exp(-30.0L))), 1e-20);
  EXPECT_NEAR(sigmoid[2], static_cast<float>(std::exp(-100.0L)), 2e-45);
  EXPECT_GT(sigmoid[2], 0.0f);
  // gelu_tanh(-10) = -10 sigma(2 k (x + kappa x^3)) = -10 sigma(-22.3376...) ~ -1.99e-9.
  const long double w = 2 * 0.797884560802865355879892119868763737L * (-10 + 0.044715L * -1000);
  EXPECT_NEAR(gelu_tanh[0], static_cast<float>(-10 * std::exp(w) / (1 + std::exp(w))), 1e-15);
}

// logsumexp's contiguous lanes take exp from the vector kernel in chunks of 256, summed in
// double: a 1000-element lane (several chunks and a tail) and the lanes of infinities and NaN.
TEST(VecEager, LogsumexpOverLongLanes) {
  std::vector<float> v(3 * 1000);
  for (size_t i = 0; i < 1000; ++i) v[i] = static_cast<float>(i % 97) * 0.25f - 12.0f;
  for (size_t i = 1000; i < 2000; ++i) v[i] = -INFINITY;
  for (size_t i = 2000; i < 3000; ++i) v[i] = i == 2500 ? NAN : 1.0f;
  const Tensor x = ag::from_vector(v, {3, 1000});
  const std::vector<float> r =
      ag::kernels::logsumexp(x, {1}, false, ag::DType::f32).to_vector<float>();
  long double sum = 0, m = 12.0L;
  for (size_t i = 0; i < 1000; ++i) sum += std::exp(static_cast<long double>(v[i]) - m);
  EXPECT_NEAR(r[0], static_cast<float>(std::log(sum) + m), 2e-6f);
  EXPECT_EQ(r[1], -INFINITY);
  EXPECT_TRUE(std::isnan(r[2]));
}
