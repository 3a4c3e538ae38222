// What pytorch/examples' cpp/autograd, cpp/mnist and cpp/dcgan needed beyond the surface, each in
// the spelling those programs use: tensor_list and saved_data's toDouble() in a custom Function,
// module.to(device), nn::LeakyReLU and nn::Dropout2d (issue 17's "Done when" check).
#include <gtest/gtest.h>

#include <sstream>
#include <variant>

#include "aotgrad/torch.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::contains;
using testing::error_of;

// cpp/autograd's MulConstant, verbatim apart from the names.
class ScaleBy : public torch::autograd::Function<ScaleBy> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor x,
                               double constant) {
    ctx->saved_data["constant"] = constant;
    return x * constant;
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    return {grads[0] * ctx->saved_data["constant"].toDouble(), torch::Tensor()};
  }
};

TEST(TorchApiPorting, TensorListAndSavedDataToDouble) {
  torch::Tensor x = torch::ones({2}, torch::requires_grad());
  torch::Tensor y = ScaleBy::apply(x, 5.5);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{5.5f, 5.5f}));
  y.sum().backward();
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{5.5f, 5.5f}));
}

TEST(TorchApiPorting, SavedValueAccessorsReadTheHeldType) {
  torch::autograd::SavedValue i = int64_t{7}, b = true, s = std::string("relu");
  torch::autograd::SavedValue l = IntList{2, 3};
  EXPECT_EQ(i.toInt(), 7);
  EXPECT_TRUE(b.toBool());
  EXPECT_EQ(s.toStringRef(), "relu");
  EXPECT_EQ(l.toIntList(), (IntList{2, 3}));
  EXPECT_EQ(std::get<int64_t>(i), 7);  // still a variant
  EXPECT_THROW(i.toDouble(), std::bad_variant_access);
}

TEST(TorchApiPorting, ModuleToCpuKeepsParametersAndCudaIsOneError) {
  torch::nn::Linear fc(3, 2);
  torch::Tensor w = fc->weight;
  torch::Device device(torch::kCPU);
  EXPECT_EQ(&fc->to(device), fc.get());
  EXPECT_TRUE(fc->weight.is_same(w));
  std::string e = error_of([&] { fc->to(torch::Device(torch::kCUDA)); });
  EXPECT_TRUE(contains(e, "Module::to")) << e;
  EXPECT_TRUE(contains(e, "cuda")) << e;
}

TEST(TorchApiPorting, LeakyReLUModule) {
  torch::nn::LeakyReLU act(torch::nn::LeakyReLUOptions().negative_slope(0.2));
  torch::Tensor x = testing::f64({-2, -0.5, 0, 3}, {4});
  EXPECT_EQ(act(x).to_vector<double>(), (std::vector<double>{-0.4, -0.1, 0, 3}));
  torch::nn::LeakyReLU plain;
  EXPECT_EQ(plain(x).to_vector<double>(), (std::vector<double>{-0.02, -0.005, 0, 3}));
  std::ostringstream os;
  os << *act;
  EXPECT_EQ(os.str(), "torch::nn::LeakyReLU(negative_slope=0.2)");
}

TEST(TorchApiPorting, Dropout2dZeroesWholeChannelsInTrainingOnly) {
  torch::nn::Dropout2d drop(0.5);
  torch::Tensor x = torch::ones({4, 8, 3, 3});
  torch::manual_seed(3);
  std::vector<float> y = drop(x).to_vector<float>();
  int zeroed = 0;
  for (size_t channel = 0; channel < 32; ++channel) {
    float first = y[channel * 9];
    EXPECT_TRUE(first == 0.0f || first == 2.0f) << first;
    for (size_t k = 1; k < 9; ++k) EXPECT_EQ(y[channel * 9 + k], first);
    zeroed += first == 0.0f;
  }
  EXPECT_GT(zeroed, 0);
  EXPECT_LT(zeroed, 32);
  drop->eval();
  EXPECT_EQ(drop(x).to_vector<float>(), x.to_vector<float>());
  std::ostringstream os;
  os << *drop;
  EXPECT_EQ(os.str(), "torch::nn::Dropout2d(p=0.5, inplace=false)");
}

}  // namespace
}  // namespace aotgrad
