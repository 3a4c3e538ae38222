// A small LibTorch-style program that includes only <aotgrad/torch.h> and spells everything the
// LibTorch way (torch::, at::, c10::, AT_ASSERT, TORCH_CHECK): polynomial regression with
// hand-written parameters, written as the pytorch/examples C++ programs are. It must compile
// unchanged and learn.
#include <aotgrad/torch.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int64_t kDegree = 3;

torch::Tensor make_features(torch::Tensor x) {
  x = x.unsqueeze(1);
  std::vector<torch::Tensor> columns;
  for (int64_t i = 0; i < kDegree; ++i) columns.push_back(x.pow(i + 1));
  return torch::cat(columns, 1);
}

std::pair<torch::Tensor, torch::Tensor> get_batch(const torch::Tensor& w, const torch::Tensor& b) {
  auto x = make_features(torch::randn({32}));
  return {x, x.mm(w) + b.item()};
}

TEST(TorchApiProgram, LibTorchStyleRegressionLearns) {
  torch::manual_seed(3);
  auto w_target = torch::tensor({{0.5}, {-1.0}, {0.25}});
  auto b_target = torch::tensor({0.75});
  torch::Device device(torch::cuda::is_available() ? torch::kCUDA : torch::kCPU);

  auto w = torch::zeros({kDegree, 1}, torch::dtype(torch::kFloat).requires_grad(true));
  auto b = torch::zeros(1, torch::TensorOptions().device(device).requires_grad(true));
  float loss_value = 0;
  int64_t steps = 0;
  while (++steps < 2000) {
    auto [x, y] = get_batch(w_target, b_target);
    x = x.to(device);
    auto loss = (x.mm(w) + b - y).pow(2).mean();
    loss_value = loss.item<float>();
    AT_ASSERT(!std::isnan(loss_value));
    loss.backward();
    {
      torch::NoGradGuard no_grad;
      w -= 0.05 * w.grad();
      b -= 0.05 * b.grad();
      w.grad().zero_();
      b.grad().zero_();
    }
    if (loss_value < 1e-4f) break;
  }
  EXPECT_LT(loss_value, 1e-4f) << "after " << steps << " steps";
  EXPECT_NEAR(w[1].item<float>(), -1.0f, 0.05f);
  EXPECT_NEAR(b[0].item().toFloat(), 0.75f, 0.05f);

  at::Tensor pred = w.detach().squeeze().argmax();
  EXPECT_EQ(pred.item<int64_t>(), 0);
  c10::ScalarType t = w.scalar_type();
  EXPECT_EQ(t, torch::kFloat32);
  using namespace torch::indexing;
  EXPECT_EQ(w.index({Slice(None, 2), 0}).sizes(), (torch::IntArrayRef{2}));
  EXPECT_EQ(torch::str("loss ", 1.5), "loss 1.5");
  EXPECT_EQ(torch::str(w.dtype(), " on ", w.device()), "f32 on cpu");
  try {
    TORCH_CHECK(steps < 0, "steps was ", steps);
    ADD_FAILURE() << "TORCH_CHECK did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "Expected steps < 0 to be true. steps was " + std::to_string(steps));
  }
}

}  // namespace
