// Linear algebra: the GEMM kernel (oneDNN against the loop nest and a naive reference, odd sizes,
// transposed / strided / expanded operands), mm / bmm / addmm rows, and the matmul and linear
// composites for every rank combination, with finite-difference gradients.
#include <gtest/gtest.h>

#include <limits>
#include <stdexcept>

#include "aotgrad/aotgrad.h"
#include "kernels/gemm.h"
#include "ops/op.h"
#include "tensor/iter.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::gradcheck;
using testing::test_input;

Tensor input_f32(const IntList& sizes, uint64_t seed) {
  return test_input(sizes, -1, 1, seed, false).to(DType::f32);
}

// C[b] = A[b] @ B[b] in double, for [B, M, K] / [B, K, N] tensors of any layout.
Tensor naive_bmm(const Tensor& a, const Tensor& b) {
  const int64_t B = a.size(0), M = a.size(1), K = a.size(2), N = b.size(2);
  std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>(), c(B * M * N, 0.0);
  for (int64_t p = 0; p < B; ++p)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        double s = 0;
        for (int64_t k = 0; k < K; ++k) s += x[(p * M + i) * K + k] * y[(p * K + k) * N + j];
        c[(p * M + i) * N + j] = s;
      }
  return from_vector(c, {B, M, N});
}

Tensor naive_mm(const Tensor& a, const Tensor& b) {
  Tensor a3 =
      make_view(a, {1, a.size(0), a.size(1)}, {0, a.stride(0), a.stride(1)}, a.storage_offset());
  Tensor b3 =
      make_view(b, {1, b.size(0), b.size(1)}, {0, b.stride(0), b.stride(1)}, b.storage_offset());
  Tensor c = naive_bmm(a3, b3);
  return make_view(c, {a.size(0), b.size(1)}, {b.size(1), 1}, 0);
}

// The transpose of a fresh contiguous [cols, rows] tensor: a [rows, cols] column-major operand.
Tensor column_major(const IntList& sizes, uint64_t seed, DType dtype = DType::f32) {
  Tensor base = test_input({sizes[1], sizes[0]}, -1, 1, seed, false).to(dtype);
  return make_view(base, sizes, {1, sizes[0]}, 0);
}

TEST(LinalgGemm, HandComputed) {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector(std::vector<float>{7, 8, 9, 10, 11, 12}, {3, 2});
  EXPECT_EQ(mm(a, b).to_vector<float>(), (std::vector<float>{58, 64, 139, 154}));
  Tensor ai = from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor bi = from_vector(std::vector<int64_t>{7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor ci = mm(ai, bi);
  EXPECT_EQ(ci.dtype(), DType::i64);
  EXPECT_EQ(ci.to_vector<int64_t>(), (std::vector<int64_t>{58, 64, 139, 154}));
}

TEST(LinalgGemm, OneDnnMatchesNaiveOnOddSizes) {
  Tensor a = input_f32({37, 53}, 1), b = input_f32({53, 29}, 2);
  EXPECT_EQ(kernels::gemm_backend(a, b).rfind("onednn:", 0), 0u) << kernels::gemm_backend(a, b);
  EXPECT_TRUE(allclose(mm(a, b), naive_mm(a, b), 1e-5, 1e-5));
}

TEST(LinalgGemm, TransposedOperandsNeedNoCopy) {
  Tensor at = column_major({37, 53}, 3), bt = column_major({53, 29}, 4);
  Tensor a = input_f32({37, 53}, 5), b = input_f32({53, 29}, 6);
  for (auto [x, y] : {std::pair{at, b}, std::pair{a, bt}, std::pair{at, bt}}) {
    EXPECT_EQ(kernels::gemm_backend(x, y).rfind("onednn:", 0), 0u);
    EXPECT_TRUE(allclose(mm(x, y), naive_mm(x, y), 1e-5, 1e-5));
  }
}

TEST(LinalgGemm, StridedAndExpandedOperands) {
  // Every other row and column of a [74, 106] tensor: neither row- nor column-major.
  Tensor big = input_f32({74, 106}, 7);
  Tensor a = make_view(big, {37, 53}, {212, 2}, 1);
  Tensor b = input_f32({53, 29}, 8);
  EXPECT_TRUE(allclose(mm(a, b), naive_mm(a, b), 1e-5, 1e-5));
  // A broadcast row: stride 0 along the rows.
  Tensor row = input_f32({53}, 9);
  Tensor rows = make_view(row, {5, 53}, {0, 1}, 0);
  EXPECT_TRUE(allclose(mm(rows, b), naive_mm(rows, b), 1e-5, 1e-5));
}

TEST(LinalgGemm, F64AndLoopNestMatchNaive) {
  Tensor a = test_input({37, 53}, -1, 1, 1, false), b = test_input({53, 29}, -1, 1, 2, false);
  EXPECT_EQ(kernels::gemm_backend(a, b), "loop");
  EXPECT_TRUE(allclose(mm(a, b), naive_mm(a, b), 1e-12, 1e-12));
  Tensor at = column_major({37, 53}, 3, DType::f64);
  EXPECT_TRUE(allclose(mm(at, b), naive_mm(at, b), 1e-12, 1e-12));
  // The loop nest on f32 agrees with oneDNN; sizes span several cache blocks and leave a
  // remainder in every blocked dim.
  Tensor x = input_f32({3, 70, 301}, 4), y = input_f32({3, 301, 270}, 5);
  EXPECT_TRUE(allclose(kernels::bmm_loop(x, y), bmm(x, y), 1e-4, 1e-4));
  EXPECT_TRUE(allclose(bmm(x, y), naive_bmm(x, y), 1e-4, 1e-4));
}

TEST(LinalgGemm, I64IsExactAcrossBlocks) {
  auto ints = [](int64_t rows, int64_t cols, int64_t seed) {
    std::vector<int64_t> v(static_cast<size_t>(rows * cols));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>((i * 7 + seed) % 11) - 5;
    return from_vector(v, {rows, cols});
  };
  Tensor a = ints(40, 301, 1), b = ints(301, 270, 2);
  EXPECT_EQ(kernels::gemm_backend(a, b), "loop");
  EXPECT_TRUE(allclose(mm(a, b), naive_mm(a, b), 0, 0));
}

TEST(LinalgGemm, BatchedWithSharedAndTransposedOperands) {
  Tensor a = input_f32({4, 7, 5}, 1);
  Tensor w = input_f32({5, 3}, 2);
  Tensor shared = make_view(w, {4, 5, 3}, {0, 3, 1}, 0);  // expand over the batch
  EXPECT_TRUE(allclose(bmm(a, shared), naive_bmm(a, shared), 1e-5, 1e-5));
  Tensor base = input_f32({4, 5, 7}, 3);
  Tensor at = make_view(base, {4, 7, 5}, {35, 1, 7}, 0);  // transpose(1, 2)
  EXPECT_TRUE(allclose(bmm(at, shared), naive_bmm(at, shared), 1e-5, 1e-5));
  Tensor ad = a.to(DType::f64), sd = shared.to(DType::f64);
  EXPECT_TRUE(allclose(bmm(ad, sd), naive_bmm(ad, sd), 1e-12, 1e-12));
}

TEST(LinalgGemm, EmptyDims) {
  Tensor k0 = mm(make_tensor({3, 0}, DType::f32), make_tensor({0, 2}, DType::f32));
  EXPECT_EQ(k0.sizes(), (IntList{3, 2}));
  EXPECT_EQ(k0.to_vector<float>(), std::vector<float>(6, 0.0f));
  EXPECT_EQ(mm(make_tensor({0, 4}, DType::f64), make_tensor({4, 2}, DType::f64)).sizes(),
            (IntList{0, 2}));
}

TEST(LinalgMm, RejectsBadOperands) {
  Tensor a = input_f32({2, 3}, 1);
  EXPECT_THROW(mm(a, input_f32({4, 2}, 2)), std::invalid_argument);
  EXPECT_THROW(mm(a, input_f32({3}, 2)), std::invalid_argument);
  EXPECT_THROW(mm(a, test_input({3, 2}, -1, 1, 1, false)), std::invalid_argument);
  EXPECT_THROW(bmm(input_f32({2, 2, 3}, 1), input_f32({3, 3, 2}, 2)), std::invalid_argument);
  EXPECT_THROW(matmul(scalar_tensor(1.0, DType::f32), a), std::invalid_argument);
  EXPECT_THROW(matmul(a, input_f32({2, 4, 5}, 3)), std::invalid_argument);
}

TEST(LinalgAddmm, BetaAlphaAndBroadcastSelf) {
  const ops::OpDef& addmm = ops::lookup("aten.addmm.default");
  Tensor bias = from_vector(std::vector<float>{1, 2}, {2});
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = from_vector(std::vector<float>{7, 8, 9, 10, 11, 12}, {3, 2});
  Tensor out = ops::call1(addmm, {bias, a, b});
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{59, 66, 140, 156}));
  Tensor scaled = ops::call1(addmm, {bias, a, b, Scalar(0.5), Scalar(2.0)});
  EXPECT_EQ(scaled.to_vector<float>(), (std::vector<float>{116.5, 129, 278.5, 309}));
  Tensor nan_self = full({2, 2}, std::numeric_limits<double>::quiet_NaN());
  Tensor ignored = ops::call1(addmm, {nan_self, a, b, Scalar(0.0), Scalar(1.0)});
  EXPECT_EQ(ignored.to_vector<float>(), (std::vector<float>{58, 64, 139, 154}));
}

// ---- matmul: every rank combination against a naive broadcast product ----

// The matmul reference, built from unsqueeze / expand and naive_bmm.
Tensor naive_matmul(const Tensor& a, const Tensor& b) {
  Tensor a2 = a.dim() == 1 ? a.unsqueeze(0) : a;
  Tensor b2 = b.dim() == 1 ? b.unsqueeze(1) : b;
  IntList ba(a2.sizes().begin(), a2.sizes().end() - 2),
      bb(b2.sizes().begin(), b2.sizes().end() - 2);
  IntList batch = broadcast_shapes(ba, bb);
  int64_t nb = numel_of(batch);
  IntList sa = batch, sb = batch;
  sa.insert(sa.end(), {a2.size(-2), a2.size(-1)});
  sb.insert(sb.end(), {b2.size(-2), b2.size(-1)});
  Tensor a3 = a2.expand(sa).contiguous().view({nb, a2.size(-2), a2.size(-1)});
  Tensor b3 = b2.expand(sb).contiguous().view({nb, b2.size(-2), b2.size(-1)});
  IntList out = batch;
  if (a.dim() > 1) out.push_back(a2.size(-2));
  if (b.dim() > 1) out.push_back(b2.size(-1));
  return naive_bmm(a3, b3).view(out);
}

struct MatmulCase {
  IntList a, b, out;
};

const MatmulCase kMatmulCases[] = {
    {{4}, {4}, {}},
    {{3, 4}, {4}, {3}},
    {{4}, {4, 2}, {2}},
    {{3, 4}, {4, 2}, {3, 2}},
    {{2, 3, 4}, {4}, {2, 3}},
    {{2, 3, 4}, {4, 5}, {2, 3, 5}},
    {{4}, {2, 4, 5}, {2, 5}},
    {{3, 4}, {2, 4, 5}, {2, 3, 5}},
    {{2, 3, 4}, {2, 4, 5}, {2, 3, 5}},
    {{2, 1, 3, 4}, {5, 4, 2}, {2, 5, 3, 2}},
    {{1, 3, 4}, {2, 2, 4, 1}, {2, 2, 3, 1}},
};

TEST(LinalgMatmul, EveryRankCombination) {
  uint64_t seed = 1;
  for (const MatmulCase& c : kMatmulCases) {
    Tensor a = test_input(c.a, -1, 1, seed++, false), b = test_input(c.b, -1, 1, seed++, false);
    Tensor r = matmul(a, b);
    EXPECT_EQ(r.sizes(), c.out) << shape_to_string(c.a) << " @ " << shape_to_string(c.b);
    EXPECT_TRUE(allclose(r, naive_matmul(a, b), 1e-12, 1e-12))
        << shape_to_string(c.a) << " @ " << shape_to_string(c.b);
  }
}

TEST(LinalgMatmul, FoldsBatchedInputWithStrides) {
  // [2, 3, 4] viewed from a permuted base: folding must not assume contiguity.
  Tensor base = test_input({3, 2, 4}, -1, 1, 1, false);
  Tensor a = make_view(base, {2, 3, 4}, {4, 8, 1}, 0);
  Tensor b = test_input({4, 5}, -1, 1, 2, false);
  EXPECT_TRUE(allclose(matmul(a, b), naive_matmul(a, b), 1e-12, 1e-12));
}

TEST(LinalgMatmulGrad, EveryRankCombination) {
  uint64_t seed = 10;
  for (const MatmulCase& c : kMatmulCases) {
    EXPECT_TRUE(gradcheck([](auto& x) { return matmul(x[0], x[1]); },
                          {test_input(c.a, -1, 1, seed), test_input(c.b, -1, 1, seed + 1)}))
        << shape_to_string(c.a) << " @ " << shape_to_string(c.b);
    seed += 2;
  }
}

TEST(LinalgMatmulGrad, BatchedSideWithoutGrad) {
  // The batched operand does not require grad: the no-fold (bmm) path for 3-D @ 2-D.
  Tensor a = test_input({2, 3, 4}, -1, 1, 1, false);
  EXPECT_TRUE(gradcheck([&](auto& x) { return matmul(a, x[0]); }, {test_input({4, 5})}));
  EXPECT_TRUE(gradcheck([&](auto& x) { return matmul(x[0], a); }, {test_input({5, 3})}));
}

TEST(LinalgGrad, MmAndBmm) {
  EXPECT_TRUE(gradcheck([](auto& x) { return mm(x[0], x[1]); },
                        {test_input({3, 4}, -1, 1, 1), test_input({4, 2}, -1, 1, 2)}));
  EXPECT_TRUE(gradcheck([](auto& x) { return mm(transpose(x[0], 0, 1), x[1]); },
                        {test_input({4, 3}, -1, 1, 3), test_input({4, 2}, -1, 1, 4)}));
  EXPECT_TRUE(gradcheck([](auto& x) { return bmm(x[0], x[1]); },
                        {test_input({2, 3, 4}, -1, 1, 5), test_input({2, 4, 2}, -1, 1, 6)}));
}

TEST(LinalgGrad, Addmm) {
  const ops::OpDef& addmm = ops::lookup("aten.addmm.default");
  EXPECT_TRUE(gradcheck(
      [&](auto& x) {
        return ops::call1(addmm, {x[0], x[1], x[2], Scalar(0.5), Scalar(-2.0)});
      },
      {test_input({2}, -1, 1, 1), test_input({3, 4}, -1, 1, 2), test_input({4, 2}, -1, 1, 3)}));
  EXPECT_TRUE(gradcheck(
      [&](auto& x) {
        return ops::call1(addmm, {x[0], x[1], x[2]});
      },
      {test_input({3, 1}, -1, 1, 4), test_input({3, 4}, -1, 1, 5), test_input({4, 2}, -1, 1, 6)}));
}

// ---- linear ----

TEST(LinalgLinear, Values) {
  Tensor x = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor w = from_vector(std::vector<float>{1, 0, -1, 2, 1, 0}, {2, 3});
  Tensor b = from_vector(std::vector<float>{10, 20}, {2});
  EXPECT_EQ(linear(x, w).to_vector<float>(), (std::vector<float>{-2, 4, -2, 13}));
  EXPECT_EQ(linear(x, w, b).to_vector<float>(), (std::vector<float>{8, 24, 8, 33}));
  Tensor x3 = x.view({1, 2, 3});
  Tensor y3 = linear(x3, w, b);
  EXPECT_EQ(y3.sizes(), (IntList{1, 2, 2}));
  EXPECT_EQ(y3.to_vector<float>(), (std::vector<float>{8, 24, 8, 33}));
  Tensor x1 = from_vector(std::vector<float>{1, 2, 3}, {3});
  EXPECT_EQ(linear(x1, w, b).to_vector<float>(), (std::vector<float>{8, 24}));
  EXPECT_THROW(linear(x, from_vector(std::vector<float>{1, 2, 3}, {3})), std::invalid_argument);
}

TEST(LinalgLinearGrad, WithAndWithoutBias) {
  auto with_bias = [](auto& x) { return linear(x[0], x[1], x[2]); };
  auto no_bias = [](auto& x) { return linear(x[0], x[1]); };
  Tensor w = test_input({3, 4}, -1, 1, 2), b = test_input({3}, -1, 1, 3);
  for (IntList xs : {IntList{4}, IntList{5, 4}, IntList{2, 5, 4}}) {
    EXPECT_TRUE(gradcheck(with_bias, {test_input(xs, -1, 1, 1), w, b})) << shape_to_string(xs);
    EXPECT_TRUE(gradcheck(no_bias, {test_input(xs, -1, 1, 1), w})) << shape_to_string(xs);
  }
  // A non-contiguous 3-D input takes the matmul + add path.
  Tensor base = test_input({5, 2, 4}, -1, 1, 4);
  EXPECT_TRUE(
      gradcheck([&](auto& x) { return linear(transpose(x[0], 0, 1), x[1], x[2]); }, {base, w, b}));
}

}  // namespace
}  // namespace aotgrad
