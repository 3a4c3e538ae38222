// Options builders and the LibTorch modules built from them, against PyTorch 1.13. Inputs and
// weights come from pattern() (as in layers_test.cpp); the expected values were printed by
//   def pattern(n, phase, scale): return [(((i*37 + phase) % 101) / 101.0 - 0.5) * scale
//                                         for i in range(n)]
//   T(sizes, phase, scale) = torch.tensor(pattern(prod(sizes), phase, scale),
//                                         dtype=float64).reshape(sizes).float()
// and the torch.nn.functional call named next to each expectation, then pasted here.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
namespace F = aotgrad::nn::functional;
using ag::Tensor;

namespace {

Tensor pattern(const ag::IntList& sizes, int phase, double scale) {
  std::vector<double> v;
  for (int64_t i = 0; i < ag::numel_of(sizes); ++i)
    v.push_back((((i * 37 + phase) % 101) / 101.0 - 0.5) * scale);
  return ag::from_vector(v, sizes).to(ag::DType::f32);
}

void set(Tensor& param, const Tensor& values) {
  ag::NoGradGuard no_grad;
  param.copy_(values);
}

void expect_values(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  std::vector<double> got = t.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "element " << i;
}

}  // namespace

TEST(NnOptions, BuildersChainAndKeepLibTorchDefaults) {
  auto conv = nn::Conv2dOptions(1, 10, 5).stride(2).padding(1).bias(false);
  EXPECT_EQ(conv.kernel_size().vec(), (ag::IntList{5, 5}));
  EXPECT_EQ(conv.stride().vec(), (ag::IntList{2, 2}));
  EXPECT_EQ(conv.padding().vec(), (ag::IntList{1, 1}));
  EXPECT_EQ(conv.dilation().vec(), (ag::IntList{1, 1}));
  EXPECT_EQ(conv.groups(), 1);
  EXPECT_FALSE(conv.bias());
  EXPECT_EQ(nn::Conv2dOptions(1, 2, {3, 5}).kernel_size().vec(), (ag::IntList{3, 5}));
  EXPECT_THROW(nn::Conv2dOptions(1, 2, {3, 5, 7}), std::invalid_argument);

  EXPECT_TRUE(nn::LinearOptions(3, 4).bias());
  EXPECT_DOUBLE_EQ(nn::LeakyReLUOptions().negative_slope(), 0.01);
  EXPECT_DOUBLE_EQ(nn::LeakyReLUOptions().negative_slope(0.2).negative_slope(), 0.2);
  EXPECT_DOUBLE_EQ(nn::DropoutOptions().p(), 0.5);
  auto bn = nn::BatchNorm2dOptions(8);
  EXPECT_DOUBLE_EQ(bn.eps(), 1e-5);
  EXPECT_DOUBLE_EQ(*bn.momentum(), 0.1);
  EXPECT_TRUE(bn.affine() && bn.track_running_stats());
  EXPECT_EQ(nn::MaxPool2dOptions(3).stride().vec(), (ag::IntList{3, 3}));
  EXPECT_EQ(nn::ConvTranspose2dOptions(4, 2, 3).output_padding().vec(), (ag::IntList{0, 0}));
  EXPECT_EQ(nn::MSELossOptions().reduction().name(), "mean");
  EXPECT_EQ(nn::MSELossOptions(ag::kSum).reduction().name(), "sum");
  EXPECT_EQ(nn::NLLLossOptions().reduction(ag::kNone).reduction().name(), "none");
  EXPECT_THROW(nn::L1LossOptions("avg"), std::invalid_argument);

  // The module keeps its options; options-built and positional modules agree.
  nn::Conv2d c(conv);
  EXPECT_EQ(c->options.stride().vec(), (ag::IntList{2, 2}));
  EXPECT_FALSE(c->bias.defined());
  EXPECT_EQ(c->weight.sizes(), (ag::IntList{10, 1, 5, 5}));
  nn::Linear lin(nn::LinearOptions(3, 4).bias(false));
  EXPECT_EQ(lin->named_parameters().keys(), (std::vector<std::string>{"weight"}));
  nn::Dropout drop(0.2);
  EXPECT_DOUBLE_EQ(drop->options.p(), 0.2);
}

TEST(NnOptions, Conv1dMatchesTorch) {
  // F.conv1d(T([2,2,7],3,2.), T([3,2,3],5,1.), T([3],7,.5), stride=2, padding=1), then
  // backward of T(y.shape, 11, 1.) for x.grad.
  nn::Conv1d conv(nn::Conv1dOptions(2, 3, 3).stride(2).padding(1));
  set(conv->weight, pattern({3, 2, 3}, 5, 1.0));
  set(conv->bias, pattern({3}, 7, 0.5));
  Tensor x = pattern({2, 2, 7}, 3, 2.0).requires_grad_();
  Tensor y = conv(x);
  ASSERT_EQ(y.sizes(), (ag::IntList{2, 3, 4}));
  expect_values(
      y, {0.15893049538135529,  -0.5569797158241272,  0.11854232847690582,  -0.43424665927886963,
          -0.586535632610321,   -0.6540780067443848,  0.3169052302837372,   -0.12952163815498352,
          -0.20328888297080994, 0.3775365352630615,   -0.3560190498828888,  0.17520341277122498,
          -0.4505195617675781,  0.09246642887592316,  0.06501816213130951,  -0.6585384011268616,
          0.354450523853302,    -0.35224488377571106, 0.31180766224861145,  -0.1499118059873581,
          0.28813350200653076,  0.33175671100616455,  -0.31268996000289917, 0.3587148189544678});
  y.backward(pattern({2, 3, 4}, 11, 1.0));
  expect_values(
      x.grad(),
      {-0.10222037136554718, -0.021517513319849968, 0.022914418950676918, 0.11489070951938629,
       0.03418782353401184,  0.023576127365231514,  -0.06840015947818756, -0.17917361855506897,
       -0.14086854457855225, 0.05477403849363327,   -0.25218114256858826, 0.07585041224956512,
       0.21076364815235138,  -0.1159445196390152,   0.03306048735976219,  0.10547986626625061,
       0.04433388635516167,  0.014165281318128109,  -0.05825408548116684, 0.19017742574214935,
       -0.04698069021105766, 0.07374276965856552,   -0.273649662733078,   0.09481913596391678,
       0.18929517269134521,  -0.09697578102350235,  -0.08043330907821655, -0.07589942216873169});
}

TEST(NnOptions, BatchNorm1dMatchesTorchIncludingCumulativeMomentum) {
  // torch.nn.BatchNorm1d(3) in training mode on T([4,3],23,3.).
  nn::BatchNorm1d bn(3);
  Tensor y = bn(pattern({4, 3}, 23, 3.0));
  expect_values(y,
                {-1.3415799140930176, -1.3415796756744385, 1.6978821754455566, -0.4471932649612427,
                 -0.4471932351589203, -0.8454474806785583, 0.44719329476356506, 0.447193443775177,
                 -0.565960705280304, 1.3415799140930176, 1.3415801525115967, -0.28647392988204956});
  expect_values(bn->running_mean,
                {-0.037128712981939316, 0.07277227938175201, -0.042326733469963074});
  expect_values(bn->running_var, {0.914704442024231, 0.914704442024231, 1.0505955219268799});
  // BatchNorm1d(3, momentum=None) over two batches: the running statistics are their average.
  nn::BatchNorm1d cumulative(nn::BatchNorm1dOptions(3).momentum(std::nullopt));
  cumulative(pattern({4, 3}, 23, 3.0));
  cumulative(pattern({4, 3}, 29, 1.0));
  expect_values(cumulative->running_mean,
                {-0.21782177686691284, 0.514851450920105, -0.3774752616882324});
  expect_values(cumulative->running_var,
                {0.08169133961200714, 0.08169134706258774, 0.7611469030380249});
  EXPECT_EQ(cumulative->num_batches_tracked.item<int64_t>(), 2);
  EXPECT_THROW(bn(ag::ones({2, 4})), std::invalid_argument);
}

TEST(NnOptions, ActivationsFlattenAndFunctionalMatchTorch) {
  Tensor x = pattern({7}, 9, 8.0);
  // torch.sigmoid(T([7],9,8.)), torch.tanh(...)
  expect_values(nn::Sigmoid()(x),
                {0.03601539880037308, 0.411822646856308, 0.9291863441467285, 0.07620596140623093,
                 0.6072205305099487, 0.9666357636451721, 0.15407773852348328});
  expect_values(nn::Tanh()(x),
                {-0.9972122311592102, -0.342070609331131, 0.9884510040283203, -0.9864820241928101,
                 0.4100269079208374, 0.997620165348053, -0.935779333114624});
  expect_values(nn::ReLU()(x),
                {0.0, 0.0, 2.5742573738098145, 0.0, 0.4356435537338257, 3.3663365840911865, 0.0});

  Tensor cube = ag::ones({2, 3, 4, 5});
  EXPECT_EQ(nn::Flatten()(cube).sizes(), (ag::IntList{2, 60}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(cube).sizes(),
            (ag::IntList{6, 4, 5}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(-2))(cube).sizes(), (ag::IntList{2, 3, 20}));
  EXPECT_THROW(nn::Flatten(nn::FlattenOptions().start_dim(4))(cube), std::invalid_argument);

  // Functional binds the arguments after the tensor: softmax(x, 0).
  nn::Functional softmax0(static_cast<Tensor (*)(const Tensor&, int64_t)>(ag::softmax), int64_t{0});
  EXPECT_TRUE(ag::testing::allclose(softmax0(x), ag::softmax(x, 0), 0, 0));

  // F:: spellings.
  EXPECT_TRUE(ag::testing::allclose(F::relu(x), ag::relu(x), 0, 0));
  EXPECT_TRUE(ag::testing::allclose(F::log_softmax(x, 0), ag::log_softmax(x, 0), 0, 0));
  EXPECT_TRUE(
      ag::testing::allclose(F::dropout(x, F::DropoutFuncOptions().training(false)), x, 0, 0));
  EXPECT_TRUE(ag::testing::allclose(F::gelu(x, F::GELUFuncOptions().approximate("tanh")),
                                    ag::gelu(x, "tanh"), 0, 0));
}

TEST(NnOptions, LossModulesMatchTorch) {
  Tensor a = pattern({2, 3}, 31, 2.0), t = pattern({2, 3}, 37, 2.0);
  // F.mse_loss(a, t, reduction='sum')
  expect_values(nn::MSELoss(nn::MSELossOptions(ag::kSum))(a, t), {0.08469758927822113});
  expect_values(F::mse_loss(a, t, F::MSELossFuncOptions(ag::kSum)), {0.08469758927822113});
  // F.nll_loss(F.log_softmax(T([3,4],41,3.), 1), [1, 3, 0])
  Tensor logits = pattern({3, 4}, 41, 3.0);
  Tensor labels = ag::from_vector(std::vector<int64_t>{1, 3, 0}, {3});
  expect_values(nn::NLLLoss()(ag::log_softmax(logits, 1), labels), {1.065930962562561});
  expect_values(F::nll_loss(F::log_softmax(logits, 1), labels), {1.065930962562561});
  // F.cross_entropy(T([3,4],41,3.), [1, 3, 0], reduction='sum')
  expect_values(
      nn::CrossEntropyLoss(nn::CrossEntropyLossOptions().reduction(ag::kSum))(logits, labels),
      {3.1977927684783936});
  expect_values(F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions(ag::kSum)),
                {3.1977927684783936});
}

TEST(NnOptions, CompositeLossModulesMatchTorch) {
  Tensor a = pattern({2, 3}, 31, 2.0), t = pattern({2, 3}, 37, 2.0);
  // F.l1_loss(a, t); F.smooth_l1_loss(a, t, beta=0.5)
  expect_values(nn::L1Loss()(a, t), {0.11881189793348312});
  expect_values(nn::SmoothL1Loss(nn::SmoothL1LossOptions().beta(0.5))(a, t),
                {0.014116264879703522});
  // p = sigmoid(T([2,3],43,4.)), y = (T([2,3],47,1.) > 0).float() = [0, 1, 0, 1, 1, 0]:
  // F.binary_cross_entropy(p, y); with weight=T([3],53,1.).abs()+.5, reduction='sum'.
  Tensor logits = pattern({2, 3}, 43, 4.0);
  Tensor p = ag::sigmoid(logits);
  Tensor y = ag::from_vector(std::vector<float>{0, 1, 0, 1, 1, 0}, {2, 3});
  expect_values(nn::BCELoss()(p, y), {0.36827924847602844});
  Tensor w = ag::abs(pattern({3}, 53, 1.0)) + 0.5;
  expect_values(nn::BCELoss(nn::BCELossOptions().weight(w).reduction(ag::kSum))(p, y),
                {1.4477741718292236});
  // F.binary_cross_entropy_with_logits(logits, y, pos_weight=[1., 2., .5]); reduction='none'.
  Tensor pos_weight = ag::from_vector(std::vector<float>{1.0f, 2.0f, 0.5f}, {3});
  expect_values(
      nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions().pos_weight(pos_weight))(logits, y),
      {0.4450598657131195});
  expect_values(nn::BCEWithLogitsLoss(nn::BCEWithLogitsLossOptions(ag::kNone))(logits, y),
                {0.5556203722953796, 0.27070608735084534, 0.22716709971427917, 0.6448671221733093,
                 0.18997763097286224, 0.32133713364601135});
  // Gradients flow through the composites: d/dx of the mean BCE-with-logits is
  // (sigmoid(x) - y) / n.
  Tensor x = logits.detach().requires_grad_();
  nn::BCEWithLogitsLoss()(x, y).backward();
  EXPECT_TRUE(ag::testing::allclose(x.grad(), (ag::sigmoid(logits) - y) * (1.0 / 6), 1e-6, 1e-5));
  EXPECT_THROW(nn::BCELoss()(p, ag::ones({3})), std::invalid_argument);
}
