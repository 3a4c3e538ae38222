// TensorOptions on the factories, torch::tensor literals and from_blob. Expected dtypes and
// values from PyTorch 1.13 / LibTorch semantics (python3 -c 'import torch; ...' where noted).
#include <gtest/gtest.h>

#include <memory>

#include "aotgrad/torch.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::error_of;

TEST(TorchApiOptions, BuildersAndFactories) {
  TensorOptions o = torch::dtype(torch::kDouble).requires_grad(true);
  EXPECT_EQ(o.dtype(), DType::f64);
  EXPECT_TRUE(o.requires_grad());
  EXPECT_TRUE(o.device().is_cpu());

  Tensor z = torch::zeros({2, 3}, o);
  EXPECT_EQ(z.dtype(), DType::f64);
  EXPECT_TRUE(z.requires_grad());
  EXPECT_TRUE(z.is_leaf());
  EXPECT_EQ(torch::ones(3, torch::requires_grad()).sizes(), (IntList{3}));
  EXPECT_EQ(torch::empty({4}, torch::kInt).dtype(), DType::i32);
  EXPECT_EQ(torch::zeros(5, torch::Device(torch::kCPU)).sizes(), (IntList{5}));
  EXPECT_EQ(torch::randn({2, 2}, torch::dtype(torch::kDouble)).dtype(), DType::f64);
  EXPECT_EQ(torch::rand(3, torch::kFloat).dtype(), DType::f32);
  // torch.full((2,), 3).dtype int64; torch.full((2,), 1.5).dtype float32
  EXPECT_EQ(torch::full({2}, 3, TensorOptions()).dtype(), DType::i64);
  EXPECT_EQ(torch::full({2}, 1.5, TensorOptions()).to_vector<float>(),
            (std::vector<float>{1.5f, 1.5f}));
  Tensor r = torch::randint(10, {50}, torch::kByte);
  EXPECT_EQ(r.dtype(), DType::u8);
  EXPECT_TRUE(r.lt(10).all().item<bool>());
  EXPECT_EQ(torch::randint(2, 5, {4}, TensorOptions()).dtype(), DType::i64);
  EXPECT_EQ(torch::arange(5, torch::kFloat).to_vector<float>(),
            (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(torch::arange(1, 7, 2, torch::kInt).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 3, 5}));
  // torch.linspace(0, 1, 5) -> [0, .25, .5, .75, 1]; torch.linspace(-1, 2, 4) -> [-1, 0, 1, 2]
  EXPECT_EQ(torch::linspace(0, 1, 5).to_vector<float>(),
            (std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(torch::linspace(-1, 2, 4).to_vector<float>(), (std::vector<float>{-1, 0, 1, 2}));
  EXPECT_EQ(torch::eye(2, 3, torch::kLong).to_vector<int64_t>(),
            (std::vector<int64_t>{1, 0, 0, 0, 1, 0}));
  Tensor like = torch::zeros_like(z, torch::kFloat);
  EXPECT_EQ(like.dtype(), DType::f32);
  EXPECT_FALSE(like.requires_grad());
  EXPECT_EQ(torch::ones_like(z, torch::requires_grad()).dtype(), DType::f64);
  EXPECT_EQ(torch::full_like(z, 2, TensorOptions()).to_vector<double>()[0], 2.0);
  EXPECT_EQ(torch::randn_like(z, torch::kFloat).dtype(), DType::f32);
  EXPECT_EQ(error_of([] { torch::zeros({2}, torch::dtype(torch::kLong).requires_grad(true)); }),
            "requires_grad(true) needs a floating dtype, got i64: only floating tensors can "
            "require gradients");
}

TEST(TorchApiOptions, TensorLiterals) {
  // LibTorch's literal dtypes: double -> default float, int -> kInt, int64_t -> kLong, bool ->
  // kBool
  EXPECT_EQ(torch::tensor({1.0, 2.0}).dtype(), DType::f32);
  EXPECT_EQ(torch::tensor({1, 2}).dtype(), DType::i64);
  EXPECT_EQ(torch::tensor(std::vector<int>{1, 2}).dtype(), DType::i64);
  EXPECT_EQ(torch::tensor({int64_t{1}}).dtype(), DType::i64);
  EXPECT_EQ(torch::tensor({true, false}).dtype(), DType::b8);
  EXPECT_EQ(torch::tensor(3.5).dim(), 0);
  Tensor n = torch::tensor({{1, 2, 3}, {4, 5, 6}});
  EXPECT_EQ(n.sizes(), (IntList{2, 3}));
  EXPECT_EQ(n.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  Tensor v = torch::tensor({0.1, 1.0, 0.0001}, torch::kFloat);
  EXPECT_EQ(v.to_vector<float>(), (std::vector<float>{0.1f, 1.0f, 0.0001f}));
  EXPECT_EQ(torch::tensor({1, 2}, torch::kDouble).dtype(), DType::f64);
  EXPECT_EQ(torch::tensor({1, 2.5}).dtype(), DType::f32);  // a mixed list promotes
  EXPECT_EQ(torch::tensor(std::vector<double>{1, 2}).dtype(), DType::f64);
  EXPECT_EQ(torch::tensor({}).sizes(), (IntList{0}));
  EXPECT_EQ(error_of([] {
              torch::tensor({{1, 2}, {3}});
            }),
            "torch::tensor: element 1 has shape [1] but element 0 has shape [2]; every element "
            "of a brace list needs the same shape");
}

TEST(TorchApiOptions, FromBlobSharesMemoryAndRunsTheDeleter) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  Tensor t = torch::from_blob(data, {2, 3});
  EXPECT_EQ(t.data_ptr<float>(), data);
  data[4] = 50;
  EXPECT_EQ(t.index({1, 1}).item<float>(), 50.f);
  t.index_put_({0, 0}, 10);
  EXPECT_EQ(data[0], 10.f);
  // Strided: every other element, as a column.
  Tensor s = torch::from_blob(data, {3}, {2});
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{10, 3, 50}));
  // An int64 blob with a deleter: it runs once the last tensor sharing the storage dies.
  auto owned = std::make_unique<int64_t[]>(4);
  for (int k = 0; k < 4; ++k) owned[k] = k * 10;
  int deleted = 0;
  int64_t* raw = owned.release();
  {
    Tensor b = torch::from_blob(
        raw, {4},
        [&deleted](void* p) {
          delete[] static_cast<int64_t*>(p);
          ++deleted;
        },
        torch::kLong);
    Tensor view = b.index({torch::indexing::Slice(1, 3)});
    b = Tensor();
    EXPECT_EQ(deleted, 0);
    EXPECT_EQ(view.to_vector<int64_t>(), (std::vector<int64_t>{10, 20}));
  }
  EXPECT_EQ(deleted, 1);
  EXPECT_EQ(error_of([&] {
              torch::from_blob(data, {2, 3}, {1});
            }),
            "torch::from_blob: 1 strides for the 2-dim shape [2, 3]; give one stride per dim");
}

}  // namespace
}  // namespace aotgrad
