// The u8 (kByte) and i32 (kInt) dtypes: promotion, arithmetic, comparisons, casts, reductions
// and file I/O. Expected values come from PyTorch 1.13 (/usr/bin/python3 -c 'import torch; ...',
// the expression is in the comment by each check).
#include <gtest/gtest.h>

#include "aotgrad/npy.h"
#include "aotgrad/safetensors.h"
#include "aotgrad/torch.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::error_of;

Tensor u8s() {
  return torch::tensor({200, 3, 7}, torch::kUInt8);
}
Tensor i32s() {
  return torch::tensor({-5, 100000, 7}, torch::kInt);
}

TEST(TorchApiDtype, NamesSizesAndPromotion) {
  EXPECT_EQ(dtype_name(DType::u8), "u8");
  EXPECT_EQ(parse_dtype("i32"), DType::i32);
  EXPECT_EQ(itemsize(DType::u8), 1u);
  EXPECT_EQ(itemsize(DType::i32), 4u);
  EXPECT_EQ(torch::kByte, DType::u8);
  EXPECT_EQ(torch::kInt32, DType::i32);
  // torch.promote_types
  EXPECT_EQ(promote_types(DType::u8, DType::i32), DType::i32);
  EXPECT_EQ(promote_types(DType::i32, DType::u8), DType::i32);
  EXPECT_EQ(promote_types(DType::i32, DType::i64), DType::i64);
  EXPECT_EQ(promote_types(DType::u8, DType::b8), DType::u8);
  EXPECT_EQ(promote_types(DType::i32, DType::f16), DType::f16);
}

TEST(TorchApiDtype, ResultTypesOfMixedArithmetic) {
  // (u8+i32).dtype int32; (u8+5) uint8; (i32+5) int32; (i32+2.5) float32; (i32*tensor(3)) int32
  EXPECT_EQ((u8s() + i32s()).dtype(), DType::i32);
  EXPECT_EQ((u8s() + 5).dtype(), DType::u8);
  EXPECT_EQ((i32s() + 5).dtype(), DType::i32);
  EXPECT_EQ((i32s() + 2.5).dtype(), DType::f32);
  EXPECT_EQ((i32s() * torch::tensor(int64_t{3})).dtype(), DType::i32);
  // (u8 + tensor(1.5, float64)).dtype float64; (i32 + int64[1]) int64; (u8 + True) uint8
  EXPECT_EQ((u8s() + torch::tensor(1.5, torch::kDouble)).dtype(), DType::f64);
  EXPECT_EQ((i32s() + torch::tensor({int64_t{1}})).dtype(), DType::i64);
  EXPECT_EQ((u8s() + true).dtype(), DType::u8);
}

TEST(TorchApiDtype, ArithmeticWrapsLikeTorch) {
  // u+i -> [195, 100003, 14]; u*u -> [64, 9, 49]; i*i -> [25, 1410065408, 49]; u - 3 -> [197, 0, 4]
  EXPECT_EQ((u8s() + i32s()).to_vector<int64_t>(), (std::vector<int64_t>{195, 100003, 14}));
  EXPECT_EQ((u8s() * u8s()).to_vector<int64_t>(), (std::vector<int64_t>{64, 9, 49}));
  EXPECT_EQ((i32s() * i32s()).to_vector<int64_t>(), (std::vector<int64_t>{25, 1410065408, 49}));
  EXPECT_EQ((torch::tensor({1}, torch::kByte) - 3).to_vector<int64_t>(),
            (std::vector<int64_t>{254}));  // tensor([1], dtype=uint8) - 3 -> [254]
  // tensor([5, 7], dtype=int32) / 2 -> [2.5, 3.5] (float32)
  Tensor q = torch::tensor({5, 7}, torch::kInt) / 2;
  EXPECT_EQ(q.dtype(), DType::f32);
  EXPECT_EQ(q.to_vector<float>(), (std::vector<float>{2.5f, 3.5f}));
  // u.sum() -> 210, int64
  EXPECT_EQ(u8s().sum().dtype(), DType::i64);
  EXPECT_EQ(u8s().sum().item<int64_t>(), 210);
}

TEST(TorchApiDtype, ComparisonsAndCasts) {
  // u > i -> [True, False, False]
  EXPECT_EQ((u8s().gt(i32s())).to_vector<bool>(), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(u8s().eq(torch::tensor({200, 4, 7}, torch::kByte)).to_vector<bool>(),
            (std::vector<bool>{true, false, true}));
  // i.to(uint8) -> [251, 160, 7]; tensor([1.7, -1.7, 300.2]).to(int32) -> [1, -1, 300]
  EXPECT_EQ(i32s().to(torch::kByte).to_vector<int64_t>(), (std::vector<int64_t>{251, 160, 7}));
  EXPECT_EQ(torch::tensor({1.7, -1.7, 300.2}).to(torch::kInt).to_vector<int64_t>(),
            (std::vector<int64_t>{1, -1, 300}));
  EXPECT_EQ(u8s().to(torch::kInt).data_ptr<int32_t>()[0], 200);
  EXPECT_EQ(u8s().data_ptr<uint8_t>()[2], 7);
}

TEST(TorchApiDtype, IndexingAndFactories) {
  Tensor z = torch::zeros({2, 3}, torch::kByte);
  EXPECT_EQ(z.dtype(), DType::u8);
  Tensor r = torch::arange(6, torch::kInt).view({2, 3});
  EXPECT_EQ(r.index({1, torch::indexing::Slice(1, torch::indexing::None)}).to_vector<int64_t>(),
            (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(r.index({torch::tensor({int64_t{1}, int64_t{0}})}).to_vector<int64_t>(),
            (std::vector<int64_t>{3, 4, 5, 0, 1, 2}));
  // torch.tensor([[1, 2], [3, 4]], dtype=torch.int32).mm(same) -> [[7, 10], [15, 22]], int32;
  // the same in uint8 with 16s -> 16*16*2 = 512 wraps to 0
  Tensor m = torch::tensor({{1, 2}, {3, 4}}, torch::kInt);
  EXPECT_EQ(m.mm(m).dtype(), DType::i32);
  EXPECT_EQ(m.mm(m).to_vector<int64_t>(), (std::vector<int64_t>{7, 10, 15, 22}));
  Tensor s = torch::full({2, 2}, 16, torch::kByte);
  EXPECT_EQ(s.mm(s).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0}));
  Tensor full = torch::full({2}, 9, torch::kByte);
  EXPECT_EQ(full.to_vector<int64_t>(), (std::vector<int64_t>{9, 9}));
}

TEST(TorchApiDtype, NpyAndSafetensorsRoundTrip) {
  for (const Tensor& t : {u8s(), i32s()}) {
    Tensor back = read_npy_bytes(write_npy_bytes(t));
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.to_vector<int64_t>(), t.to_vector<int64_t>());
  }
  // np.save of uint8 / int32 arrays writes descr '|u1' / '<i4'.
  EXPECT_TRUE(testing::contains(write_npy_bytes(u8s()), "'|u1'"));
  EXPECT_TRUE(testing::contains(write_npy_bytes(i32s()), "'<i4'"));

  SafetensorsContents c =
      read_safetensors_bytes(write_safetensors_bytes({{"u", u8s()}, {"i", i32s()}}));
  ASSERT_EQ(c.tensors.size(), 2u);
  // Written widest dtype first: I32 before U8.
  EXPECT_EQ(c.tensors[0].first, "i");
  EXPECT_EQ(c.tensors[0].second.dtype(), DType::i32);
  EXPECT_EQ(c.tensors[1].second.dtype(), DType::u8);
  EXPECT_EQ(c.tensors[1].second.to_vector<int64_t>(), (std::vector<int64_t>{200, 3, 7}));
}

}  // namespace
}  // namespace aotgrad
