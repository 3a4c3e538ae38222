// The u8 (kByte) and i32 (kInt) dtypes: promotion, arithmetic, comparisons, casts, reductions
// and file I/O. Expected values come from PyTorch 1.13 (/usr/bin/python3 -c 'import torch; ...',
// the expression is in the comment by each check).
#include <gtest/gtest.h>

#include "aotgrad/npy.h"
#include "aotgrad/safetensors.h"
#include "aotgrad/torch.h"
#include "testing/compare.h"
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

// i32 index tensors, where PyTorch takes them: index_select, index_add, embedding (1.13 and 2.x)
// and advanced indexing (2.x); gather keeps to i64 as PyTorch's does.
TEST(TorchApiDtype, I32IndicesForIndexSelectEmbeddingIndexAddAndIndex) {
  Tensor idx = torch::tensor({2, 0, 2}, torch::kInt);
  // x = arange(12.).view(3, 4).requires_grad_(); index_select(x, 0, idx).sum().backward()
  // -> rows 8..11, 0..3, 8..11; x.grad rows [1, 0, 2]
  Tensor x = torch::arange(12., torch::kFloat).view({3, 4}).requires_grad_();
  Tensor rows = torch::index_select(x, 0, idx);
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  rows.sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{1, 1, 1, 1, 0, 0, 0, 0, 2, 2, 2, 2}));
  // x[idx] (PyTorch 2), and with autograd through index_put.
  EXPECT_EQ(x.index({idx}).to_vector<float>(), rows.to_vector<float>());
  // F.embedding(tensor([[1, 2], [1, 0]], dtype=int32), w), w = arange(6.).view(3, 2)
  // -> [[[2, 3], [4, 5]], [[2, 3], [0, 1]]]; w.grad rows [1, 2, 1]
  Tensor w = torch::arange(6., torch::kFloat).view({3, 2}).requires_grad_();
  Tensor pos = torch::tensor({{1, 2}, {1, 0}}, torch::kInt);
  Tensor e = torch::embedding(w, pos);
  EXPECT_EQ(e.sizes(), (IntList{2, 2, 2}));
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{2, 3, 4, 5, 2, 3, 0, 1}));
  e.sum().backward();
  EXPECT_EQ(w.grad().to_vector<float>(), (std::vector<float>{1, 1, 2, 2, 1, 1}));
  torch::nn::Embedding table(3, 2);
  EXPECT_EQ(table(pos).to_vector<float>(), table(pos.to(torch::kLong)).to_vector<float>());
  // zeros(3).index_add(0, tensor([0, 2, 0], dtype=int32), tensor([1., 2., 3.])) -> [4, 0, 2]
  EXPECT_EQ(torch::index_add(torch::zeros({3}), 0, torch::tensor({0, 2, 0}, torch::kInt),
                             torch::tensor({1.f, 2.f, 3.f}))
                .to_vector<float>(),
            (std::vector<float>{4, 0, 2}));
  // An i32 index out of range names the value; gather wants i64.
  std::string err = error_of([&] { torch::index_select(x, 0, torch::tensor({3}, torch::kInt)); });
  EXPECT_NE(err.find("index 3 is out of range"), std::string::npos) << err;
  err = error_of([&] { torch::gather(x, 0, torch::zeros({1, 4}, torch::kInt)); });
  EXPECT_NE(err.find("must be an i64 tensor, got i32"), std::string::npos) << err;
}

// x = arange(6.).view(3, 2); m = tensor([1, 0, 1], dtype=uint8) (PyTorch's deprecated byte mask)
// x[m] -> [[0, 1], [4, 5]]; x[m] = -1 -> [[-1, -1], [2, 3], [-1, -1]]
TEST(TorchApiDtype, U8MasksIndexLikeBoolMasks) {
  Tensor x = torch::arange(6., torch::kFloat).view({3, 2});
  Tensor m = torch::tensor({1, 0, 1}, torch::kUInt8);
  EXPECT_EQ(x.index({m}).sizes(), (IntList{2, 2}));
  EXPECT_EQ(x.index({m}).to_vector<float>(), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(x.index({m}).to_vector<float>(), x.index({m.to(torch::kBool)}).to_vector<float>());
  x.index_put_({m}, -1);
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{-1, -1, 2, 3, -1, -1}));
}

TEST(TorchApiDtype, I32IndexSelectCompiledMatchesEager) {
  auto fn = [](const Tensor& x, const Tensor& i) {
    return torch::index_select(x, 1, i) * 2 + torch::embedding(x, i).sum(0).unsqueeze(1);
  };
  Tensor x = torch::arange(9., torch::kFloat).view({3, 3}).requires_grad_();
  testing::expect_compiled_matches_eager(fn,
                                         testing::inputs(x, torch::tensor({2, 0}, torch::kInt)));
}

}  // namespace
}  // namespace aotgrad
