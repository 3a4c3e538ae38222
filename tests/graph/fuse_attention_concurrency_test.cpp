// The fused attention rows from several threads at once (run under ThreadSanitizer by the tsan
// preset): each call's OpenMP team uses its own threads' scratch, so concurrent calls on
// different inputs each get the composite's result.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;

TEST(ConcurrencyMaskedAttention, ThreadsCallingTheFusedRowsGetTheCompositesResults) {
  static const ag::ops::OpDef& row = ag::ops::lookup("aotgrad.masked_attention.default");
  static const ag::ops::OpDef& backward =
      ag::ops::lookup("aotgrad.masked_attention_backward.default");
  std::vector<bool> future(6 * 6);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) future[static_cast<size_t>(i * 6 + j)] = j > i;
  const Tensor mask = ag::from_vector(future, {6, 6});
  constexpr int kThreads = 4;
  std::vector<Tensor> q(kThreads), k(kThreads), v(kThreads), g(kThreads), expected(kThreads),
      expected_dq(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    q[t] = ag::testing::test_input({2, 3, 6, 4}, -1, 1, 10 * t + 1, false).to(ag::DType::f32);
    k[t] = ag::testing::test_input({2, 3, 6, 4}, -1, 1, 10 * t + 2, false).to(ag::DType::f32);
    v[t] = ag::testing::test_input({2, 3, 6, 4}, -1, 1, 10 * t + 3, false).to(ag::DType::f32);
    g[t] = ag::testing::test_input({2, 3, 6, 4}, -1, 1, 10 * t + 4, false).to(ag::DType::f32);
    expected[t] = ag::ops::call1(row, {q[t], k[t], v[t], mask, 0.5});
    expected_dq[t] =
        ag::ops::dispatch(backward, {g[t], q[t], k[t], v[t], mask, 0.5, ag::IntList{1, 1, 1}})[0];
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        Tensor out = ag::ops::call1(row, {q[t], k[t], v[t], mask, 0.5});
        Tensor dq = ag::ops::dispatch(backward,
                                      {g[t], q[t], k[t], v[t], mask, 0.5, ag::IntList{1, 1, 1}})[0];
        if (out.to_vector<float>() != expected[t].to_vector<float>() ||
            dq.to_vector<float>() != expected_dq[t].to_vector<float>())
          ++mismatches[t];
      }
    });
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[t], 0) << "thread " << t;
  // And the expected values are the composite's.
  Tensor s = ag::masked_fill(ag::mul(ag::matmul(q[0], k[0].transpose(-2, -1)), ag::Scalar(0.5)),
                             mask, ag::Scalar(-std::numeric_limits<double>::infinity()));
  EXPECT_TRUE(ag::testing::allclose(expected[0], ag::matmul(ag::softmax(s, -1), v[0]), 1e-6, 1e-5));
}
