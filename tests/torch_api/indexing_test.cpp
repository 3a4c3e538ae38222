// Tensor::index / index_put_ with torch::indexing::{Slice, None, Ellipsis}, and t[i]. Expected
// values from PyTorch 1.13: a = torch.arange(24.).reshape(2, 3, 4) and the Python expression in
// the comment by each check (printed with .tolist()).
#include <gtest/gtest.h>

#include "aotgrad/torch.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using namespace torch::indexing;
using testing::error_of;

Tensor a24() {
  return torch::arange(24., torch::kFloat).view({2, 3, 4});
}
std::vector<float> vals(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}
Tensor idx(std::vector<int64_t> v) {
  return from_vector(v, {static_cast<int64_t>(v.size())});
}

TEST(TorchApiIndexing, BasicEntries) {
  Tensor a = a24();
  // a[0:2, None, ..., 3] -> shape [2, 1, 3], values [3, 7, 11, 15, 19, 23]
  Tensor r = a.index({Slice(0, 2), None, Ellipsis, 3});
  EXPECT_EQ(r.sizes(), (IntList{2, 1, 3}));
  EXPECT_EQ(vals(r), (std::vector<float>{3, 7, 11, 15, 19, 23}));
  // a[-1, -2] -> [16, 17, 18, 19]; a[0, 1:, ::2] -> [[4, 6], [8, 10]]; a[0, -2:, 5:] -> [2, 0]
  EXPECT_EQ(vals(a.index({-1, -2})), (std::vector<float>{16, 17, 18, 19}));
  EXPECT_EQ(vals(a.index({0, Slice(1, None), Slice(None, None, 2)})),
            (std::vector<float>{4, 6, 8, 10}));
  EXPECT_EQ(a.index({0, Slice(-2, None), Slice(5, None)}).sizes(), (IntList{2, 0}));
  // a[True] / a[False] / a[None, 0] -> [1,2,3,4] / [0,2,3,4] / [1,3,4]
  EXPECT_EQ(a.index({true}).sizes(), (IntList{1, 2, 3, 4}));
  EXPECT_EQ(a.index({false}).sizes(), (IntList{0, 2, 3, 4}));
  EXPECT_EQ(a.index({None, 0}).sizes(), (IntList{1, 3, 4}));
  // Basic indexing returns views.
  EXPECT_TRUE(a.index({Slice(0, 1)}).is_view());
  // t[i] is select(0, i)
  EXPECT_EQ(vals(a[1][2]), (std::vector<float>{20, 21, 22, 23}));
}

TEST(TorchApiIndexing, AdvancedEntries) {
  Tensor a = a24();
  // a[1, tensor([0, 2]), 1:3] -> [[13, 14], [21, 22]]
  EXPECT_EQ(vals(a.index({1, idx({0, 2}), Slice(1, 3)})), (std::vector<float>{13, 14, 21, 22}));
  // a[:, tensor([0, 2]), tensor([1, 3])] -> [[1, 11], [13, 23]]
  EXPECT_EQ(vals(a.index({Slice(), idx({0, 2}), idx({1, 3})})),
            (std::vector<float>{1, 11, 13, 23}));
  // a[..., tensor([3, 0])] -> shape [2, 3, 2], [1, 2] = [23, 20]
  Tensor e = a.index({Ellipsis, idx({3, 0})});
  EXPECT_EQ(e.sizes(), (IntList{2, 3, 2}));
  EXPECT_EQ(vals(e[1][2]), (std::vector<float>{23, 20}));
  // a[0][a[0] > 5] -> [6, ..., 11]
  Tensor a0 = a[0];
  EXPECT_EQ(vals(a0.index({a0.gt(5)})), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(vals(a0[idx({2})]), (std::vector<float>{8, 9, 10, 11}));
}

TEST(TorchApiIndexing, IndexPut) {
  // b = zeros(3, 4); b[1:, tensor([0, 3])] = tensor([1., 2.]); b[0] = 7
  Tensor b = torch::zeros({3, 4});
  b.index_put_({Slice(1, None), idx({0, 3})}, torch::tensor({1.f, 2.f}));
  b.index_put_({0}, 7);
  EXPECT_EQ(vals(b), (std::vector<float>{7, 7, 7, 7, 1, 0, 0, 2, 1, 0, 0, 2}));
  // c = zeros(2, 3); c[tensor([True, False])] = 5 -> [[5, 5, 5], [0, 0, 0]]
  Tensor c = torch::zeros({2, 3});
  c.index_put_({torch::tensor({true, false})}, 5);
  EXPECT_EQ(vals(c), (std::vector<float>{5, 5, 5, 0, 0, 0}));
}

TEST(TorchApiIndexing, GradientsFlowThroughIndexAndIndexPut) {
  Tensor x = torch::arange(6., torch::kFloat).view({2, 3}).detach().requires_grad_(true);
  // y = x[:, tensor([2, 0, 2])].sum() -> x.grad = [[1, 0, 2], [1, 0, 2]]
  x.index({Slice(), idx({2, 0, 2})}).sum().backward();
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{1, 0, 2, 1, 0, 2}));
  // z = x * 1; z[0, 1:] = 0; (z * x).sum() -> x.grad = 2x with x[0, 1:] -> x's grad only once
  Tensor w = torch::ones({2, 3}, torch::requires_grad());
  Tensor z = w * 2;
  z.index_put_({0, Slice(1, None)}, 0);
  z.sum().backward();
  EXPECT_EQ(vals(w.grad()), (std::vector<float>{2, 0, 0, 2, 2, 2}));
}

TEST(TorchApiIndexing, MistakesAreOneLine) {
  Tensor a = a24();
  EXPECT_EQ(error_of([&] {
              a.index({0, 0, 0, 0});
            }),
            "index: too many indices for a tensor of dimension 3 (got 4)");
  EXPECT_EQ(error_of([&] {
              a.index({Ellipsis, Ellipsis});
            }),
            "index: an index can only have a single ellipsis");
  EXPECT_EQ(error_of([&] { a.index({Slice(0, 2, 0)}); }),
            "index: slice step must be positive, got 0");
  EXPECT_EQ(error_of([&] { a.index({"x"}); }),
            "TensorIndex: the only string index is \"...\" (Ellipsis)");
}

}  // namespace
}  // namespace aotgrad
