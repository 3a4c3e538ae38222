// Rows that exist so that graphs recorded by PyTorch 1.13's make_fx load as they are:
// _reshape_alias (its view-reshape) and arange.default (torch.arange(n)).
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::gradcheck;
using testing::test_input;

Tensor reshape_alias(const Tensor& x, const IntList& size, const IntList& stride) {
  static const ops::OpDef& def = ops::lookup("aten._reshape_alias.default");
  return ops::call1(def, {x, size, stride});
}

TEST(ReshapeAlias, IsAViewWithTheGivenStrides) {
  Tensor x = test_input({2, 6}, -1, 1, 1, false);
  Tensor y = reshape_alias(x, {3, 4}, {4, 1});
  EXPECT_TRUE(y.is_view());
  EXPECT_EQ(y.sizes(), (IntList{3, 4}));
  EXPECT_EQ(y.strides(), (IntList{4, 1}));
  EXPECT_EQ(y.to_vector<double>(), x.to_vector<double>());
  // On an offset view it keeps the view's offset.
  Tensor tail = x.slice(0, 1, 2);
  Tensor z = reshape_alias(tail, {2, 3}, {3, 1});
  EXPECT_EQ(z.storage_offset(), 6);
  EXPECT_EQ(z.to_vector<double>(), tail.to_vector<double>());
}

TEST(ReshapeAlias, WrongElementCountNamesTheSizes) {
  Tensor x = test_input({2, 6}, -1, 1, 1, false);
  try {
    reshape_alias(x, {5, 2}, {2, 1});
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("aten._reshape_alias.default"), std::string::npos) << m;
    EXPECT_NE(m.find("[5, 2] holds 10 elements"), std::string::npos) << m;
  }
}

TEST(ReshapeAlias, Gradcheck) {
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& v) {
        return reshape_alias(v[0], {3, 4}, {4, 1}) * 2.0;
      },
      {test_input({2, 6})}));
  EXPECT_TRUE(
      gradcheck([](const std::vector<Tensor>& v) { return reshape_alias(v[0], {6}, {1}).exp(); },
                {test_input({2, 3})}));
}

TEST(ReshapeAlias, CompiledMatchesEager) {
  testing::expect_compiled_matches_eager(
      [](const Tensor& x) {
        return reshape_alias(x * 2.0, {4, 3}, {3, 1}).sin().sum(0);
      },
      testing::inputs(test_input({3, 4}, -1, 1, 3)));
}

Tensor arange_end(Scalar end, std::optional<DType> dtype = std::nullopt) {
  static const ops::OpDef& def = ops::lookup("aten.arange.default");
  ops::OpArgs args{end};
  if (dtype) args.push_back(*dtype);
  return ops::call1(def, args);
}

TEST(ArangeEnd, IntegerAndFloatEnds) {
  Tensor a = arange_end(Scalar(int64_t{4}));
  EXPECT_EQ(a.dtype(), DType::i64);
  EXPECT_EQ(a.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  Tensor b = arange_end(Scalar(2.5));
  EXPECT_EQ(b.dtype(), DType::f32);
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 1, 2}));
  Tensor c = arange_end(Scalar(int64_t{3}), DType::f64);
  EXPECT_EQ(c.dtype(), DType::f64);
  EXPECT_EQ(c.to_vector<double>(), (std::vector<double>{0, 1, 2}));
  EXPECT_THROW(arange_end(Scalar(int64_t{-2})), std::invalid_argument);
}

TEST(ArangeEnd, CompiledMatchesEager) {
  testing::expect_compiled_matches_eager(
      [](const Tensor& x) { return x * arange_end(Scalar(int64_t{3}), DType::f64); },
      testing::inputs(test_input({2, 3}, -1, 1, 4)));
}

}  // namespace
}  // namespace aotgrad
