// Reductions: sum, mean, amax, sum_to_size — values (negative dims, keepdim, empty dim list,
// strided inputs, every parallel loop order) and finite-difference gradients.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::f64;
using testing::gradcheck;
using testing::test_input;

Tensor f32(std::vector<float> v, const IntList& sizes) {
  return from_vector(v, sizes);
}
// [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
Tensor iota34() {
  std::vector<float> v(12);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return f32(v, {3, 4});
}

// Reference: sums `a` (any layout) over `dims` with keepdim, in double.
std::vector<double> naive_sum(const Tensor& a, const IntList& dims) {
  std::vector<double> in = a.to_vector<double>();
  IntList out_sizes = a.sizes();
  for (int64_t d : dims) out_sizes[d] = 1;
  std::vector<double> out(static_cast<size_t>(numel_of(out_sizes)), 0.0);
  IntList idx(a.dim(), 0);
  IntList ostr = contiguous_strides(out_sizes);
  for (size_t k = 0; k < in.size(); ++k) {
    int64_t o = 0;
    for (int64_t d = 0; d < a.dim(); ++d) o += (out_sizes[d] == 1 ? 0 : idx[d]) * ostr[d];
    out[static_cast<size_t>(o)] += in[k];
    for (int64_t d = a.dim() - 1; d >= 0; --d) {
      if (++idx[d] < a.size(d)) break;
      idx[d] = 0;
    }
  }
  return out;
}

Tensor sum_with_dtype(const Tensor& a, DType d) {
  return ops::call1(ops::lookup("aten.sum.default"), {a, d});
}

TEST(ReductionSum, AllElements) {
  Tensor s = sum(iota34());
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.dtype(), DType::f32);
  EXPECT_EQ(s.item<float>(), 66.0f);
}

TEST(ReductionSum, IntegersAndBoolsSumAsI64) {
  Tensor i = from_vector(std::vector<int64_t>{1, 2, 3, 4}, {2, 2});
  Tensor si = sum(i);
  EXPECT_EQ(si.dtype(), DType::i64);
  EXPECT_EQ(si.item<int64_t>(), 10);
  Tensor b = from_vector(std::vector<bool>{true, false, true, true}, {4});
  Tensor sb = sum(b, {0});
  EXPECT_EQ(sb.dtype(), DType::i64);
  EXPECT_EQ(sb.item<int64_t>(), 3);
}

TEST(ReductionSum, DtypeArgument) {
  Tensor s = sum_with_dtype(iota34(), DType::f64);
  EXPECT_EQ(s.dtype(), DType::f64);
  EXPECT_EQ(s.item<double>(), 66.0);
  // Casting first truncates each element: 0.5 + 1.5 + 2.5 -> 0 + 1 + 2.
  Tensor t = sum_with_dtype(f32({0.5f, 1.5f, 2.5f}, {3}), DType::i64);
  EXPECT_EQ(t.dtype(), DType::i64);
  EXPECT_EQ(t.item<int64_t>(), 3);
}

TEST(ReductionSum, DimsKeepdimAndNegativeDims) {
  Tensor a = iota34();
  Tensor rows = sum(a, {1});
  EXPECT_EQ(rows.sizes(), (IntList{3}));
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{6, 22, 38}));
  Tensor cols = sum(a, {-2}, /*keepdim=*/true);
  EXPECT_EQ(cols.sizes(), (IntList{1, 4}));
  EXPECT_EQ(cols.to_vector<float>(), (std::vector<float>{12, 15, 18, 21}));
  Tensor both = sum(a, {-1, 0}, true);
  EXPECT_EQ(both.sizes(), (IntList{1, 1}));
  EXPECT_EQ(both.item<float>(), 66.0f);
}

TEST(ReductionSum, EmptyDimListMeansAllDims) {
  Tensor s = sum(iota34(), IntList{});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 66.0f);
  Tensor k = sum(iota34(), IntList{}, true);
  EXPECT_EQ(k.sizes(), (IntList{1, 1}));
}

TEST(ReductionSum, ZeroDimTensorAndEmptyTensor) {
  Tensor z = scalar_tensor(2.5, DType::f32);
  EXPECT_EQ(sum(z, {0}).item<float>(), 2.5f);
  EXPECT_EQ(sum(z, {-1}, true).dim(), 0);
  Tensor e = make_tensor({0, 3}, DType::f32);
  Tensor s = sum(e, {0});
  EXPECT_EQ(s.sizes(), (IntList{3}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(sum(e).item<float>(), 0.0f);
}

TEST(ReductionSum, RejectsBadDims) {
  EXPECT_THROW(sum(iota34(), {2}), std::invalid_argument);
  EXPECT_THROW(sum(iota34(), {-3}), std::invalid_argument);
  EXPECT_THROW(sum(iota34(), {1, -1}), std::invalid_argument);
}

TEST(ReductionSum, NonContiguousInputs) {
  Tensor a = iota34();
  Tensor at = make_view(a, {4, 3}, {1, 4}, 0);  // the transpose
  EXPECT_EQ(sum(at, {1}).to_vector<float>(), (std::vector<float>{12, 15, 18, 21}));
  EXPECT_EQ(sum(at, {0}).to_vector<float>(), (std::vector<float>{6, 22, 38}));
  Tensor expanded = make_view(f32({1, 2, 3}, {3}), {4, 3}, {0, 1}, 0);
  EXPECT_EQ(sum(expanded, {0}).to_vector<float>(), (std::vector<float>{4, 8, 12}));
  EXPECT_EQ(sum(expanded).item<float>(), 24.0f);
  Tensor offset = make_view(a, {2, 2}, {4, 2}, 5);  // rows 1..2, cols 1 and 3
  EXPECT_EQ(sum(offset, {1}).to_vector<float>(), (std::vector<float>{12, 20}));
}

// Large enough for the parallel paths: full, column (batch dim) and row loop orders, on
// contiguous, transposed and 3-D inputs with two reduced dims.
TEST(ReductionSum, LargeInputsEveryLoopOrder) {
  Tensor a = test_input({300, 257}, -1, 1, 7, false);
  Tensor at = make_view(a, {257, 300}, {1, 257}, 0);
  for (const Tensor& x : {a, at}) {
    for (IntList dims : {IntList{0}, IntList{1}, IntList{0, 1}}) {
      Tensor s = sum(x, dims, true);
      EXPECT_TRUE(allclose(s, from_vector(naive_sum(x, dims), s.sizes()), 1e-9, 1e-12));
    }
  }
  Tensor b = test_input({40, 33, 50}, -1, 1, 8, false).to(DType::f32);
  for (IntList dims : {IntList{0, 2}, IntList{0, 1}, IntList{1, 2}, IntList{1}}) {
    Tensor s = sum(b, dims, true);
    EXPECT_TRUE(allclose(s, from_vector(naive_sum(b, dims), s.sizes()), 1e-4, 1e-5));
  }
}

TEST(ReductionSum, F32AccumulatesInDouble) {
  // 2^24 + eight ones: every float partial sum that starts at 2^24 swallows its ones.
  std::vector<float> v{16777216.0f, 1, 1, 1, 1, 1, 1, 1, 1};
  EXPECT_EQ(sum(f32(v, {9})).item<float>(), 16777224.0f);
  EXPECT_EQ(sum(f32(v, {9, 1}), {0}).item<float>(), 16777224.0f);
}

TEST(ReductionMean, Values) {
  Tensor a = iota34();
  EXPECT_EQ(mean(a).item<float>(), 5.5f);
  EXPECT_EQ(mean(a, {0}).to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  Tensor m = mean(a, {-1}, true);
  EXPECT_EQ(m.sizes(), (IntList{3, 1}));
  EXPECT_EQ(m.to_vector<float>(), (std::vector<float>{1.5, 5.5, 9.5}));
  EXPECT_EQ(mean(a, IntList{}).item<float>(), 5.5f);
}

TEST(ReductionMean, IntegerInputNeedsDtype) {
  Tensor i = from_vector(std::vector<int64_t>{1, 2}, {2});
  EXPECT_THROW(mean(i), std::invalid_argument);
  Tensor m = ops::call1(ops::lookup("aten.mean.default"), {i, DType::f64});
  EXPECT_EQ(m.item<double>(), 1.5);
}

TEST(ReductionMean, EmptyIsNan) {
  Tensor e = make_tensor({0}, DType::f32);
  EXPECT_TRUE(std::isnan(mean(e).item<float>()));
}

TEST(ReductionAmax, Values) {
  Tensor a = f32({1, 7, 3, 7, -2, 0}, {2, 3});
  EXPECT_EQ(amax(a, {1}).to_vector<float>(), (std::vector<float>{7, 7}));
  EXPECT_EQ(amax(a, {0}).to_vector<float>(), (std::vector<float>{7, 7, 3}));
  Tensor k = amax(a, {-1}, true);
  EXPECT_EQ(k.sizes(), (IntList{2, 1}));
  Tensor all = amax(a, {});
  EXPECT_EQ(all.dim(), 0);
  EXPECT_EQ(all.item<float>(), 7.0f);
  Tensor i = from_vector(std::vector<int64_t>{-5, -3, -9}, {3});
  EXPECT_EQ(amax(i, {0}).item<int64_t>(), -3);
}

TEST(ReductionAmax, NanPropagatesAndEmptyThrows) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor a = f32({1, nan, 3, 4, 5, 6}, {2, 3});
  std::vector<float> r = amax(a, {1}).to_vector<float>();
  EXPECT_TRUE(std::isnan(r[0]));
  EXPECT_EQ(r[1], 6.0f);
  EXPECT_THROW(amax(make_tensor({2, 0}, DType::f32), {1}), std::invalid_argument);
}

TEST(ReductionAmax, LargeTransposed) {
  Tensor a = test_input({200, 300}, -1, 1, 3, false);
  Tensor at = make_view(a, {300, 200}, {1, 300}, 0);
  std::vector<double> v = at.to_vector<double>();
  std::vector<double> expect(300, -1e9);
  for (size_t i = 0; i < 300; ++i)
    for (size_t j = 0; j < 200; ++j) expect[i] = std::max(expect[i], v[i * 200 + j]);
  EXPECT_EQ(amax(at, {1}).to_vector<double>(), expect);
}

TEST(ReductionSumToSize, Values) {
  Tensor a = iota34();
  EXPECT_TRUE(sum_to_size(a, {3, 4}).is_same(a));
  EXPECT_EQ(sum_to_size(a, {4}).to_vector<float>(), (std::vector<float>{12, 15, 18, 21}));
  Tensor c = sum_to_size(a, {3, 1});
  EXPECT_EQ(c.sizes(), (IntList{3, 1}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{6, 22, 38}));
  EXPECT_EQ(sum_to_size(a, {}).item<float>(), 66.0f);
  EXPECT_EQ(sum_to_size(a, {1, 1}).sizes(), (IntList{1, 1}));
  EXPECT_THROW(sum_to_size(a, {2, 4}), std::invalid_argument);
  EXPECT_THROW(sum_to_size(a, {1, 3, 4, 1}), std::invalid_argument);
}

// ---- gradients ----

TEST(ReductionGrad, Sum) {
  EXPECT_TRUE(gradcheck([](auto& x) { return sum(x[0]); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return sum(x[0], {1}); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return sum(x[0], {0, -1}, true); }, {test_input({2, 3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return sum(x[0], {-2}); }, {test_input({2, 3, 4})}));
}

TEST(ReductionGrad, SumOfTransposedInput) {
  Tensor base = test_input({4, 3});
  EXPECT_TRUE(gradcheck([](auto& x) { return sum(transpose(x[0], 0, 1), {1}); }, {base}));
}

TEST(ReductionGrad, Mean) {
  EXPECT_TRUE(gradcheck([](auto& x) { return mean(x[0]); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return mean(x[0], {0}); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return mean(x[0], {2, 0}, true); }, {test_input({2, 3, 4})}));
}

TEST(ReductionGrad, Amax) {
  EXPECT_TRUE(gradcheck([](auto& x) { return amax(x[0], {1}); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return amax(x[0], {0, 2}, true); }, {test_input({2, 3, 4})}));
  EXPECT_TRUE(gradcheck([](auto& x) { return amax(x[0], {}); }, {test_input({3, 4})}));
}

TEST(ReductionGrad, AmaxSplitsTiesEvenly) {
  Tensor a = f64({1, 5, 5, 2, 5, 5, 5, 0}, {2, 4});
  a.requires_grad_();
  amax(a, {1}).sum().backward();
  std::vector<double> expect{0, 0.5, 0.5, 0, 1.0 / 3, 1.0 / 3, 1.0 / 3, 0};
  EXPECT_TRUE(allclose(a.grad(), f64(expect, {2, 4}), 1e-12));
  // A two-way tie: central differences see the same half split.
  Tensor b = f64({3, 1, 3}, {3});
  b.requires_grad_();
  EXPECT_TRUE(gradcheck([](auto& x) { return amax(x[0], {0}); }, {b}));
}

TEST(ReductionGrad, SumToSize) {
  EXPECT_TRUE(gradcheck([](auto& x) { return sum_to_size(x[0], {4}); }, {test_input({3, 4})}));
  EXPECT_TRUE(gradcheck(
      [](auto& x) {
        return sum_to_size(x[0], {3, 1});
      },
      {test_input({2, 3, 4})}));
}

TEST(ReductionGrad, DtypeArgumentGradientHasInputDtype) {
  Tensor a = test_input({3}).to(DType::f32).detach().requires_grad_();
  sum_with_dtype(a, DType::f64).backward();
  EXPECT_EQ(a.grad().dtype(), DType::f32);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

}  // namespace
}  // namespace aotgrad
