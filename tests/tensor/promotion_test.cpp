// torch.result_type semantics of ops/promotion.h: dim > 0 tensors, 0-dim tensors and Scalars
// in decreasing priority; a lower class only counts when it brings a higher category.
#include "tensor/promotion.h"

#include <gtest/gtest.h>

#include "aotgrad/tensor.h"

namespace aotgrad {
namespace {

Tensor t(DType d, const IntList& sizes = {2}) {
  return make_tensor(sizes, d, /*fake=*/true);
}
Tensor zero_dim(DType d) {
  return t(d, {});
}

TEST(PromotionResultType, TensorTensor) {
  EXPECT_EQ(result_type(t(DType::f32), t(DType::f64)), DType::f64);
  EXPECT_EQ(result_type(t(DType::i64), t(DType::f32)), DType::f32);
  EXPECT_EQ(result_type(t(DType::b8), t(DType::i64)), DType::i64);
  EXPECT_EQ(result_type(t(DType::b8), t(DType::b8)), DType::b8);
  EXPECT_EQ(result_type(t(DType::f16), t(DType::bf16)), DType::f32);
  EXPECT_EQ(result_type(t(DType::f16), t(DType::f32)), DType::f32);
}

TEST(PromotionResultType, ZeroDimTensorsHaveLowerPriority) {
  EXPECT_EQ(result_type(t(DType::f32), zero_dim(DType::f64)), DType::f32);
  EXPECT_EQ(result_type(t(DType::f16), zero_dim(DType::f64)), DType::f16);
  EXPECT_EQ(result_type(t(DType::i64), zero_dim(DType::f64)), DType::f64);
  EXPECT_EQ(result_type(t(DType::b8), zero_dim(DType::i64)), DType::i64);
  EXPECT_EQ(result_type(t(DType::i64), zero_dim(DType::b8)), DType::i64);
  EXPECT_EQ(result_type(zero_dim(DType::f32), zero_dim(DType::f64)), DType::f64);
  // A dim > 0 tensor of size 1 is not 0-dim.
  EXPECT_EQ(result_type(t(DType::f32), t(DType::f64, {1})), DType::f64);
}

TEST(PromotionResultType, Scalars) {
  EXPECT_EQ(result_type(t(DType::i64), Scalar(2.5)), DType::f32);  // default float
  EXPECT_EQ(result_type(t(DType::i64), Scalar(2)), DType::i64);
  EXPECT_EQ(result_type(t(DType::b8), Scalar(1)), DType::i64);
  EXPECT_EQ(result_type(t(DType::b8), Scalar(true)), DType::b8);
  EXPECT_EQ(result_type(t(DType::b8), Scalar(0.5)), DType::f32);
  EXPECT_EQ(result_type(t(DType::f64), Scalar(0.5)), DType::f64);
  EXPECT_EQ(result_type(t(DType::f16), Scalar(0.5)), DType::f16);
  EXPECT_EQ(result_type(t(DType::f32), Scalar(int64_t{1} << 40)), DType::f32);
  // 0-dim tensors outrank Scalars.
  EXPECT_EQ(result_type(zero_dim(DType::f64), Scalar(0.5)), DType::f64);
  EXPECT_EQ(result_type(zero_dim(DType::i64), Scalar(0.5)), DType::f32);
  EXPECT_EQ(result_type(zero_dim(DType::b8), Scalar(3)), DType::i64);
}

TEST(PromotionResultType, ManyOperandsAndState) {
  std::vector<Tensor> ts = {t(DType::b8), zero_dim(DType::f64), t(DType::i64)};
  std::vector<Scalar> ss = {Scalar(1)};
  EXPECT_EQ(result_type(ts, ss), DType::f64);
  ResultTypeState s;
  s.add(Tensor()).add(t(DType::i64)).add(Scalar(1.0));
  EXPECT_EQ(s.result(), DType::f32);
  EXPECT_THROW(ResultTypeState().result(), std::logic_error);
}

TEST(PromotionHelpers, FloatOpCanCastCompute) {
  EXPECT_EQ(float_op_dtype(DType::i64), DType::f32);
  EXPECT_EQ(float_op_dtype(DType::b8), DType::f32);
  EXPECT_EQ(float_op_dtype(DType::f64), DType::f64);
  EXPECT_EQ(float_op_dtype(DType::bf16), DType::bf16);
  EXPECT_TRUE(can_cast(DType::f64, DType::f32));
  EXPECT_TRUE(can_cast(DType::i64, DType::f16));
  EXPECT_TRUE(can_cast(DType::b8, DType::i64));
  EXPECT_FALSE(can_cast(DType::f32, DType::i64));
  EXPECT_FALSE(can_cast(DType::i64, DType::b8));
  EXPECT_EQ(compute_dtype(DType::f16), DType::f32);
  EXPECT_EQ(compute_dtype(DType::bf16), DType::f32);
  EXPECT_EQ(compute_dtype(DType::i64), DType::i64);
}

}  // namespace
}  // namespace aotgrad
