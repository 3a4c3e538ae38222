// Tensor methods and operators with LibTorch's spellings and PyTorch 1.13 semantics. Expected
// values from /usr/bin/python3 -c 'import torch; ...' with the expression in each comment.
#include <gtest/gtest.h>

#include <cmath>

#include "aotgrad/torch.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::error_of;

std::vector<float> vals(const Tensor& t) {
  return t.contiguous().to_vector<float>();
}

TEST(TorchApiMethods, CompoundAssignmentIsAutogradCorrect) {
  // x = tensor([[1., 2.], [3., 4.]], requires_grad=True)
  // y = x * 1; y += x; y -= 2; y *= x; y /= tensor([2., 4.]); y.sum().backward()
  // y -> [[0, 1], [6, 6]], x.grad -> [[1, 1.5], [5, 3.5]]
  Tensor x = torch::tensor({{1.f, 2.f}, {3.f, 4.f}}, torch::requires_grad());
  Tensor y = x * 1;
  y += x;
  y -= 2;
  y *= x;
  y /= torch::tensor({2.f, 4.f});
  y.sum().backward();
  EXPECT_EQ(vals(y), (std::vector<float>{0, 1, 6, 6}));
  EXPECT_EQ(vals(x.grad()), (std::vector<float>{1, 1.5f, 5, 3.5f}));
  EXPECT_EQ(y.version(), 4u);  // four in-place writes on y's storage
}

TEST(TorchApiMethods, CompoundDivisionOfATensorThatRequiresGrad) {
  // d/dv of sum(u / v) with the division done in place on a copy of u.
  Tensor u = testing::test_input({3}, 0.5, 1.5, 1), v = testing::test_input({3}, 1.0, 2.0, 2);
  EXPECT_TRUE(testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        Tensor q = in[0] * 1;
        q /= in[1];
        return q;
      },
      {u, v}));
}

TEST(TorchApiMethods, CompoundAssignmentRefusesALossyCast) {
  // z = tensor([[1, 2], [3, 4]]); z /= 2 -> "result type Float can't be cast to the desired
  // output type Long"
  Tensor z = torch::tensor({{int64_t{1}, int64_t{2}}, {int64_t{3}, int64_t{4}}});
  EXPECT_EQ(error_of([&] { z /= 2; }),
            "div_: result type f32 can't be cast to the desired output type i64 of self");
  Tensor b = torch::tensor({true});
  EXPECT_TRUE(testing::contains(error_of([&] { b -= true; }), "sub_: subtraction of bool"));
}

TEST(TorchApiMethods, ItemAndScalars) {
  // tensor(2.5).item() -> 2.5; tensor(3).item() -> 3; tensor(True).item() -> True
  Scalar f = torch::tensor(2.5).item(), i = torch::tensor(3).item(), b = torch::tensor(true).item();
  EXPECT_TRUE(f.isFloatingPoint());
  EXPECT_EQ(f.toDouble(), 2.5);
  EXPECT_TRUE(i.isIntegral(false));
  EXPECT_EQ(i.toLong(), 3);
  EXPECT_TRUE(b.isBoolean());
  EXPECT_TRUE(b.to<bool>());
  EXPECT_EQ(torch::tensor({7}).item<int>(), 7);
  EXPECT_EQ(torch::str("x=", 3, ", y=", torch::tensor(2.5).item()), "x=3, y=2.5");
  EXPECT_EQ(error_of([] { torch::ones({2}).item(); }),
            "item() needs a one-element tensor, got shape [2]");
}

TEST(TorchApiMethods, ShapesAndSqueeze) {
  Tensor z = torch::zeros({2, 1, 3, 1});
  EXPECT_EQ(z.squeeze().sizes(), (IntList{2, 3}));  // zeros(2,1,3,1).squeeze() -> [2, 3]
  EXPECT_EQ(z.squeeze(1).sizes(), (IntList{2, 3, 1}));
  EXPECT_EQ(z.size(-2), 3);
  EXPECT_EQ(z.sizes(), (IntList{2, 1, 3, 1}));
  EXPECT_EQ(z.numel(), 6);
  EXPECT_EQ(z.dim(), 4);
  EXPECT_EQ(torch::zeros({2, 3, 4}).flatten(1).sizes(), (IntList{2, 12}));
  EXPECT_EQ(torch::ones({2, 3}).flatten().sizes(), (IntList{6}));
  Tensor s = torch::ones({3}).unsqueeze(0).expand_as(torch::zeros({2, 3}));
  EXPECT_EQ(s.sizes(), (IntList{2, 3}));
  EXPECT_EQ(z.options().dtype(), DType::f32);
  EXPECT_FALSE(z.options().requires_grad());
}

TEST(TorchApiMethods, ArgmaxArgmin) {
  Tensor m = torch::tensor({{1.f, 5.f, 2.f}, {7.f, 0.f, 7.f}});
  // argmax(1) -> [1, 0]; argmax() -> 3; argmin(1) -> [0, 1]; argmin() -> 4; argmin(0, True)
  EXPECT_EQ(m.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(m.argmax().item<int64_t>(), 3);
  EXPECT_EQ(m.argmin(1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(m.argmin().item<int64_t>(), 4);
  EXPECT_EQ(m.argmin(0, true).sizes(), (IntList{1, 3}));
  // tensor([3, 1, 1], dtype=uint8).argmin() -> 1
  EXPECT_EQ(torch::tensor({3, 1, 1}, torch::kByte).argmin().item<int64_t>(), 1);
  EXPECT_EQ(torch::tensor({INT64_MIN, int64_t{0}}).argmin().item<int64_t>(), 0);
}

TEST(TorchApiMethods, NormAllAny) {
  Tensor x = torch::tensor({{3.f, 4.f}, {0.f, 1.f}});
  // x.norm() 5.0990195; x.norm(2, 1) [5, 1]; x.norm(1) 8; x.norm(inf, 1, True) [[4], [1]];
  // x.norm(3) 4.5143576; x.norm(0) 3
  EXPECT_NEAR(x.norm().item<double>(), 5.099019527435303, 1e-6);
  EXPECT_EQ(vals(x.norm(2, 1)), (std::vector<float>{5, 1}));
  EXPECT_EQ(x.norm(1).item<float>(), 8.f);
  Tensor inf = x.norm(INFINITY, 1, true);
  EXPECT_EQ(inf.sizes(), (IntList{2, 1}));
  EXPECT_EQ(vals(inf), (std::vector<float>{4, 1}));
  EXPECT_NEAR(x.norm(3).item<double>(), 4.514357566833496, 1e-6);
  EXPECT_EQ(x.norm(0).item<float>(), 3.f);
  EXPECT_EQ(error_of([] {
              torch::tensor({1, 2}).norm();
            }),
            "aten.norm.Scalar: self must be a floating tensor (f32, f64, f16, bf16), got i64; "
            "convert it with .to(f32) first");
  // x.all() False, x.any() True, x.all(1) [True, False], x.any(0) [True, True]
  EXPECT_FALSE(x.all().item<bool>());
  EXPECT_TRUE(x.any().item<bool>());
  EXPECT_EQ(x.all(1).to_vector<bool>(), (std::vector<bool>{true, false}));
  EXPECT_EQ(x.any(0).to_vector<bool>(), (std::vector<bool>{true, true}));
  EXPECT_EQ(x.all().dtype(), DType::b8);
  // g = tensor([1.5], requires_grad=True); (g * g).norm().backward() -> g.grad [3.0]
  Tensor g = torch::tensor({1.5f}, torch::requires_grad());
  (g * g).norm().backward();
  EXPECT_FLOAT_EQ(g.grad().item<float>(), 3.f);
  EXPECT_TRUE(testing::gradcheck([](const std::vector<Tensor>& in) { return in[0].norm(2, 1); },
                                 {testing::test_input({2, 3}, 0.5, 1.5, 3)}));
}

TEST(TorchApiMethods, EqInPlaceAndRandomFills) {
  // e = tensor([1., 2., 3.]); e.eq_(tensor([1., 0., 3.])) -> [1, 0, 1]
  Tensor e = torch::tensor({1.f, 2.f, 3.f});
  e.eq_(torch::tensor({1.f, 0.f, 3.f}));
  EXPECT_EQ(vals(e), (std::vector<float>{1, 0, 1}));
  EXPECT_EQ(e.dtype(), DType::f32);
  Tensor u = torch::empty(100, torch::kCPU).uniform_(0.8, 1.0);
  EXPECT_TRUE(u.ge(0.8).all().item<bool>());
  EXPECT_TRUE(u.le(1.0).all().item<bool>());
  Tensor n = torch::empty({1000}).normal_(3.0, 0.1);
  EXPECT_NEAR(n.mean().item<double>(), 3.0, 0.05);
}

TEST(TorchApiMethods, DevicesAreCpuOnly) {
  EXPECT_FALSE(torch::cuda::is_available());
  EXPECT_EQ(torch::cuda::device_count(), 0);
  torch::Device cpu(torch::kCPU);
  Tensor t = torch::ones({2});
  EXPECT_TRUE(t.to(cpu).is_same(t));
  EXPECT_EQ(t.to(cpu, torch::kDouble).dtype(), DType::f64);
  EXPECT_EQ(t.device(), cpu);
  EXPECT_EQ(t.device().str(), "cpu");
  EXPECT_TRUE(t.cpu().is_same(t));
  EXPECT_EQ(torch::Device("cuda:1").str(), "cuda:1");
  const std::string cuda_error =
      "Tensor::to: device cuda is not available: aotgrad runs on the CPU only "
      "(torch::cuda::is_available() is false); use torch::kCPU";
  EXPECT_EQ(error_of([&] { t.to(torch::kCUDA); }), cuda_error);
  EXPECT_TRUE(testing::contains(error_of([] { torch::zeros({2}, torch::Device("cuda:0")); }),
                                "torch::zeros: device cuda:0 is not available"));
  EXPECT_EQ(error_of([] { torch::Device("gpu"); }),
            "Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"gpu\"");
}

}  // namespace
}  // namespace aotgrad

namespace aotgrad {
namespace {

TEST(TorchApiFunctions, LibTorchArgumentForms) {
  // lp = tensor([[-0.5, -1.0, -2.0], [-3.0, -0.25, -1.5]]); tg = tensor([2, 1])
  // F.nll_loss(lp, tg, reduction="sum") 2.25; default (mean) 1.125; "none" [2.0, 0.25]
  Tensor lp = torch::tensor({{-0.5f, -1.0f, -2.0f}, {-3.0f, -0.25f, -1.5f}});
  Tensor tg = torch::tensor({2, 1});
  EXPECT_EQ(torch::nll_loss(lp, tg, {}, torch::Reduction::Sum).item<float>(), 2.25f);
  EXPECT_EQ(torch::nll_loss(lp, tg).item<float>(), 1.125f);
  EXPECT_EQ(torch::nll_loss(lp, tg, {}, torch::Reduction::None).to_vector<float>(),
            (std::vector<float>{2.0f, 0.25f}));
  // F.nll_loss(lp, tg, weight=tensor([1., 2., 0.5])) 0.6; F.nll_loss(lp, tg, ignore_index=1) 2.0
  EXPECT_FLOAT_EQ(torch::nll_loss(lp, tg, torch::tensor({1.0f, 2.0f, 0.5f})).item<float>(), 0.6f);
  EXPECT_FLOAT_EQ(torch::nll_loss(lp, tg, {}, torch::Reduction::Mean, 1).item<float>(), 2.0f);
  // F.max_pool2d(arange(16.).reshape(1, 1, 4, 4), 2) -> [5, 7, 13, 15]
  Tensor x = torch::arange(16., torch::kFloat).view({1, 1, 4, 4});
  EXPECT_EQ(torch::max_pool2d(x, 2).to_vector<float>(), (std::vector<float>{5, 7, 13, 15}));
  // torch.pow(tensor([1., 2., 3.]), tensor(2.)) -> [1, 4, 9]
  EXPECT_EQ(torch::pow(torch::tensor({1.f, 2.f, 3.f}), torch::tensor(2.f)).to_vector<float>(),
            (std::vector<float>{1, 4, 9}));
  EXPECT_TRUE(torch::all(torch::ones({2})).item<bool>());
  EXPECT_FALSE(torch::any(torch::zeros({2})).item<bool>());
}

}  // namespace
}  // namespace aotgrad
