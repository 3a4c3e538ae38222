// addmm with its bias inside the oneDNN call (kernels/gemm.cpp): every shape of self that
// broadcasts to the output ([N], [1, N], [M, 1], [M, N], a transposed [M, N], a scalar), the
// scaled cases that keep the separate epilogue, and the f64 loop nest, each against a double
// reference.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <limits>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "kernels/gemm.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::test_input;

// beta * self + alpha * a @ b in double.
Tensor reference(const Tensor& self, const Tensor& a, const Tensor& b, double beta, double alpha) {
  const int64_t M = a.size(0), K = a.size(1), N = b.size(1);
  const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
  const std::vector<double> s = expand(self, {M, N}).contiguous().to_vector<double>();
  std::vector<double> c(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += x[i * K + k] * y[k * N + j];
      c[i * N + j] = beta * s[i * N + j] + alpha * acc;
    }
  return from_vector(c, {M, N});
}

TEST(GemmBias, EveryBroadcastShapeOfSelf) {
  const int64_t M = 37, K = 70, N = 53;
  for (DType dtype : {DType::f32, DType::f64}) {
    const Tensor a = test_input({M, K}, -1, 1, 1, false).to(dtype);
    const Tensor b = test_input({N, K}, -1, 1, 2, false).to(dtype).t();  // nn.Linear's weight
    const Tensor selves[] = {
        test_input({N}, -1, 1, 3, false).to(dtype),
        test_input({1, N}, -1, 1, 4, false).to(dtype),
        test_input({M, 1}, -1, 1, 5, false).to(dtype),
        test_input({M, N}, -1, 1, 6, false).to(dtype),
        test_input({N, M}, -1, 1, 7, false).to(dtype).t(),
        test_input({}, -1, 1, 8, false).to(dtype),
        expand(test_input({N}, -1, 1, 9, false).to(dtype), {M, N}),
    };
    for (const Tensor& self : selves) {
      for (auto [beta, alpha] : {std::pair{1.0, 1.0}, {0.5, 2.0}, {0.0, 1.0}, {1.0, -1.5}}) {
        const Tensor got = kernels::addmm(self, a, b, Scalar(beta), Scalar(alpha));
        EXPECT_TRUE(allclose(got.to(DType::f64), reference(self, a, b, beta, alpha), 1e-4, 1e-4))
            << dtype_name(dtype) << " self " << shape_to_string(self.sizes()) << " beta " << beta
            << " alpha " << alpha;
      }
    }
  }
}

TEST(GemmBias, NanBiasPropagatesAndLargeProductsMatch) {
  // Large enough for oneDNN's threaded kernels.
  const int64_t M = 256, K = 512, N = 384;
  const Tensor a = test_input({M, K}, -1, 1, 11, false).to(DType::f32);
  const Tensor b = test_input({N, K}, -1, 1, 12, false).to(DType::f32).t();
  Tensor bias = test_input({N}, -1, 1, 13, false).to(DType::f32);
  EXPECT_TRUE(allclose(kernels::addmm(bias, a, b, Scalar(1.0), Scalar(1.0)).to(DType::f64),
                       reference(bias, a, b, 1.0, 1.0), 1e-4, 1e-4));
  std::vector<float> v = bias.to_vector<float>();
  v[5] = std::numeric_limits<float>::quiet_NaN();
  const Tensor out = kernels::addmm(from_vector(v, {N}), a, b, Scalar(1.0), Scalar(1.0));
  const std::vector<float> o = out.to_vector<float>();
  EXPECT_TRUE(std::isnan(o[5]) && std::isnan(o[(M - 1) * N + 5]));
  EXPECT_FALSE(std::isnan(o[4]));
}

// With two threads, a product at least 256 columns wide runs as one column block per thread
// (run_in_column_blocks): every layout of b, with and without a bias, and widths that do not split
// evenly into 16-column groups, against the double reference; one and two threads agree.
TEST(GemmColumnBlocks, EveryLayoutAndBiasMatchesTheReferenceWithOneOrTwoThreads) {
  const int prev = omp_get_max_threads();
  for (int64_t n : {256, 300, 1000}) {
    for (bool transposed : {false, true}) {
      const int64_t M = 64, K = 72;  // above SmallProductScope's million multiply-adds
      const Tensor a = test_input({M, K}, -1, 1, 3, false).to(DType::f32);
      const Tensor b = transposed ? test_input({n, K}, -1, 1, 4, false).to(DType::f32).t()
                                  : test_input({K, n}, -1, 1, 4, false).to(DType::f32);
      const Tensor bias = test_input({n}, -1, 1, 5, false).to(DType::f32);
      std::vector<Tensor> results;
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        Tensor plain = kernels::mm(a, b), biased = kernels::addmm(bias, a, b, 1.0, 1.0);
        EXPECT_TRUE(allclose(plain.to(DType::f64), reference(zeros({n}, DType::f64), a, b, 0, 1),
                             1e-4, 1e-5))
            << "n " << n << " transposed " << transposed << " threads " << threads;
        EXPECT_TRUE(allclose(biased.to(DType::f64), reference(bias, a, b, 1, 1), 1e-4, 1e-5))
            << "n " << n << " transposed " << transposed << " threads " << threads;
        results.push_back(plain);
        results.push_back(biased);
      }
      EXPECT_EQ(results[0].to_vector<float>(), results[2].to_vector<float>());
      EXPECT_EQ(results[1].to_vector<float>(), results[3].to_vector<float>());
    }
  }
  omp_set_num_threads(prev);
}

}  // namespace
}  // namespace aotgrad
