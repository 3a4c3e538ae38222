// The tensor data model: from/to std::vector, storage sharing between views, the version counter
// on the Storage, printing, and f16/bf16 rounding through from_vector(...).to(...).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"

namespace aotgrad {
namespace {

TEST(TensorVector, RoundTripsEveryConstructorType) {
  Tensor f = from_vector(std::vector<float>{1.5f, -2, 3}, {3});
  EXPECT_EQ(f.dtype(), DType::f32);
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{1.5f, -2, 3}));
  EXPECT_EQ(f.to_vector<int64_t>(), (std::vector<int64_t>{1, -2, 3}));  // C-cast conversion
  Tensor d = from_vector(std::vector<double>{0.1, 0.2, 0.3, 0.4}, {2, 2});
  EXPECT_EQ(d.dtype(), DType::f64);
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0.1, 0.2, 0.3, 0.4}));
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_EQ(d.strides(), (IntList{2, 1}));
  Tensor i = from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max(), -1}, {2});
  EXPECT_EQ(i.to_vector<int64_t>()[0], std::numeric_limits<int64_t>::max());
  Tensor b = from_vector(std::vector<bool>{true, false}, {2, 1});
  EXPECT_EQ(b.dtype(), DType::b8);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1, 0}));
  Tensor s = from_vector(std::vector<double>{4.25}, {});
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<double>(), 4.25);
  EXPECT_EQ(scalar_tensor(Scalar(int64_t{7}), DType::f32).item<float>(), 7.0f);
  EXPECT_THROW(from_vector(std::vector<float>{1, 2, 3}, {2, 2}), std::invalid_argument);
  EXPECT_THROW(f.item<float>(), std::invalid_argument);
  EXPECT_THROW(f.data_ptr<double>(), std::invalid_argument);
}

TEST(TensorVector, ToVectorReadsLogicalOrderOfStridedViews) {
  Tensor m = from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3});
  EXPECT_EQ(m.t().to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(m.select(1, 1).to_vector<float>(), (std::vector<float>{1, 4}));
  EXPECT_EQ(m.expand({2, 2, 3}).to_vector<float>().size(), 12u);
  EXPECT_EQ(m.slice(1, 1, 3).data_ptr<float>()[0], 1.0f);  // data_ptr honours the offset
}

TEST(TensorStorage, ViewsShareStorageAndBase) {
  Tensor x = zeros({4, 4});
  Tensor v = make_view(x, {2, 2}, {4, 1}, 5);
  EXPECT_EQ(v.storage(), x.storage());
  EXPECT_TRUE(v.is_view());
  EXPECT_TRUE(v._base().is_same(x));
  Tensor vv = make_view(v, {2}, {1}, 6);
  EXPECT_TRUE(vv._base().is_same(x));  // the root, not the intermediate view
  v.data_ptr<float>()[1] = 9.0f;       // element (0, 1) of v is storage element 6
  EXPECT_EQ(x.to_vector<float>()[6], 9.0f);
  EXPECT_EQ(vv.to_vector<float>()[0], 9.0f);
  Tensor fresh = make_tensor({3}, DType::i64);
  EXPECT_FALSE(fresh.is_view());
  EXPECT_FALSE(fresh._base().defined());
  EXPECT_EQ(fresh.storage()->nbytes(), 24u);
}

TEST(TensorStorage, FakeTensorsHaveMetadataButNoData) {
  Tensor f = make_tensor({2, 3}, DType::f32, /*fake=*/true);
  EXPECT_TRUE(f.is_fake());
  EXPECT_EQ(f.numel(), 6);
  EXPECT_THROW(f.to_vector<float>(), std::logic_error);
  EXPECT_THROW(f.data_ptr<float>(), std::logic_error);
  EXPECT_EQ(f.to_string(), "tensor(<fake>, shape=[2, 3], dtype=f32)");
}

TEST(TensorVersion, CounterLivesOnTheStorage) {
  Tensor x = zeros({3});
  Tensor v = x.slice(0, 1, 3);
  Tensor d = x.detach();
  EXPECT_EQ(x.version(), 0u);
  v.add_(1.0);
  EXPECT_EQ(x.version(), 1u);
  EXPECT_EQ(d.version(), 1u);
  d.zero_();
  EXPECT_EQ(v.version(), 2u);
  Tensor c = x.clone();
  EXPECT_EQ(c.version(), 0u);
  x.storage()->bump_version();
  EXPECT_EQ(v.version(), 3u);
}

TEST(TensorPrint, NestedBracketsShapeAndDtype) {
  Tensor m = from_vector(std::vector<float>{1, 2.5f, 3, 4}, {2, 2});
  EXPECT_EQ(m.to_string(), "tensor([[1, 2.5], [3, 4]], shape=[2, 2], dtype=f32)");
  EXPECT_EQ(m.t().to_string(), "tensor([[1, 3], [2.5, 4]], shape=[2, 2], dtype=f32)");
  EXPECT_EQ(from_vector(std::vector<int64_t>{7}, {}).to_string(), "tensor(7, shape=[], dtype=i64)");
  EXPECT_EQ(zeros({0}).to_string(), "tensor([], shape=[0], dtype=f32)");
  Tensor g = from_vector(std::vector<double>{1, 2}, {2});
  g.requires_grad_();
  EXPECT_EQ(g.to_string(), "tensor([1, 2], shape=[2], dtype=f64, requires_grad=true)");
  std::ostringstream os;
  os << Tensor();
  EXPECT_EQ(os.str(), "Tensor(undefined)");
  // Long tensors are cut after 64 values.
  std::string big = arange(100).to_string();
  EXPECT_NE(big.find("63, ..."), std::string::npos) << big;
}

TEST(TensorHalf, F16RoundTripsAndRounding) {
  // Exactly representable values survive; others round to nearest even.
  std::vector<float> exact{0.0f,         -0.0f,    1.0f,           -2.5f,
                           0.099975586f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f};
  Tensor h = from_vector(exact, {static_cast<int64_t>(exact.size())}).to(DType::f16);
  EXPECT_EQ(h.dtype(), DType::f16);
  EXPECT_EQ(h.to(DType::f32).to_vector<float>(), exact);
  std::vector<float> in{1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f / 3.0f, 70000.0f, 1e-9f};
  std::vector<float> out = from_vector(in, {5}).to(DType::f16).to(DType::f32).to_vector<float>();
  EXPECT_EQ(out[0], 1.0f);                 // tie -> even
  EXPECT_EQ(out[1], 1.0f + 4 * 0x1p-11f);  // tie -> even (up)
  EXPECT_EQ(out[2], 0.333251953125f);
  EXPECT_TRUE(std::isinf(out[3]));  // overflow
  EXPECT_EQ(out[4], 0.0f);          // underflow
  EXPECT_TRUE(std::isnan(
      from_vector(std::vector<float>{NAN}, {1}).to(DType::f16).to(DType::f32).item<float>()));
}

TEST(TensorHalf, Bf16RoundTripsAndRounding) {
  std::vector<float> exact{1.0f, -3.0f, 0.5f, 1.0f + 0x1p-7f, 0x1.FEp127f};
  Tensor b = from_vector(exact, {5}).to(DType::bf16);
  EXPECT_EQ(b.dtype(), DType::bf16);
  EXPECT_EQ(b.to(DType::f32).to_vector<float>(), exact);
  std::vector<float> in{1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f / 3.0f};
  std::vector<float> out = from_vector(in, {3}).to(DType::bf16).to(DType::f32).to_vector<float>();
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f + 4 * 0x1p-8f);
  EXPECT_EQ(out[2], 0.333984375f);
  // Through f64 and i64 too: conversions go via float.
  EXPECT_EQ(from_vector(std::vector<double>{2.0, -7.0}, {2})
                .to(DType::bf16)
                .to(DType::i64)
                .to_vector<int64_t>(),
            (std::vector<int64_t>{2, -7}));
}

}  // namespace
}  // namespace aotgrad
