// Optimizers against torch.optim (1.13, single-tensor path): five steps on a [2, 3] parameter
// with fixed gradients; the expected parameters were printed by PyTorch 1.13 (/usr/bin/python3)
// with this script and pasted here:
//
//   def pattern(n, phase, scale):
//       return [(((i*37 + phase) % 101) / 101.0 - 0.5) * scale for i in range(n)]
//   p = torch.tensor(pattern(6, 3, 2.0), dtype=dt).reshape(2, 3).requires_grad_()
//   opt = <optimizer>([p], <options as in each test>)
//   for k in range(5):
//       p.grad = torch.tensor(pattern(6, 11 + 5*k, 1.0), dtype=dt).reshape(2, 3); opt.step()
//   print(p.detach().reshape(-1).tolist())
#include <gtest/gtest.h>

#include <memory>
#include <tuple>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "aotgrad/optim/optimizers.h"

namespace ag = aotgrad;
using ag::DType;
using ag::Tensor;
using namespace ag::optim;  // NOLINT: the optimizers and their options

namespace {

std::vector<double> pattern(int n, int phase, double scale) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back((((i * 37 + phase) % 101) / 101.0 - 0.5) * scale);
  return v;
}

// Runs `steps` steps of the optimizer `make` builds and returns the parameter's values.
template <typename Make>
std::vector<double> run_steps(DType dtype, Make make, int steps = 5) {
  Tensor p = ag::nn::parameter(ag::from_vector(pattern(6, 3, 2.0), {2, 3}).to(dtype));
  auto opt = make(std::vector<Tensor>{p});
  for (int k = 0; k < steps; ++k) {
    p.set_grad(ag::from_vector(pattern(6, 11 + 5 * k, 1.0), {2, 3}).to(dtype));
    opt->step();
  }
  return p.to_vector<double>();
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

TEST(Optim, SgdPlain) {
  auto make = [](std::vector<Tensor> p) { return std::make_unique<SGD>(std::move(p), 0.1); };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.7945544554455444, -0.24504950495049505, 0.40445544554455454,
                   -0.646039603960396, -0.09653465346534655, 0.752970297029703},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.7945544123649597, -0.24504949152469635, 0.4044555127620697,
                   -0.6460395455360413, -0.09653465449810028, 0.752970278263092},
                  1e-6);
}

TEST(Optim, SgdMomentum) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(std::move(p),
                                 SGDOptions(0.1).momentum(0.9).dampening(0.1).weight_decay(0.01));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.5340970231128577, -0.2577623665559022, 0.10857229000105341,
                   -0.459411980800167, -0.18307732424321152, 0.5977686052137441},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.5340970158576965, -0.2577623724937439, 0.1085723415017128,
                   -0.4594120383262634, -0.18307730555534363, 0.5977687239646912},
                  1e-6);
}

TEST(Optim, SgdNesterov) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(std::move(p),
                                 SGDOptions(0.1).momentum(0.8).weight_decay(0.1).nesterov(true));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.39150147494969967, -0.26111766902220857, 0.049266136905282525,
                   -0.3562626084828102, -0.22587880255531914, 0.6117393233721721},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.39150142669677734, -0.2611176371574402, 0.04926615208387375,
                   -0.35626259446144104, -0.2258787900209427, 0.6117393970489502},
                  1e-6);
}

TEST(Optim, AdamDefault) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<Adam>(std::move(p), AdamOptions(0.01));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.8917887468910386, -0.2202247659100588, 0.4798089615129404,
                   -0.6946359318250122, -0.05909836671287284, 0.703335188113135},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.8917887210845947, -0.2202247679233551, 0.4798090159893036,
                   -0.6946359872817993, -0.059098370373249054, 0.7033352255821228},
                  1e-6);
}

TEST(Optim, AdamBetasAmsgrad) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<Adam>(
        std::move(p),
        AdamOptions(0.02).betas(std::make_tuple(0.5, 0.5)).weight_decay(0.1).amsgrad(true));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.846447458015265, -0.22845058409405464, 0.44377786874137776,
                   -0.6529460158338027, -0.10780688836313697, 0.699634634762452},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.8464474678039551, -0.22845058143138885, 0.4437779188156128,
                   -0.6529460549354553, -0.10780689120292664, 0.6996346712112427},
                  1e-6);
}

TEST(Optim, AdamWDefault) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(std::move(p), AdamWOptions(0.01));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.891328456751977, -0.22012272362096735, 0.4795566539574574,
                   -0.6942745761140678, -0.05908353811476667, 0.7029813451658159},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.8913283348083496, -0.22012269496917725, 0.4795565903186798,
                   -0.6942746043205261, -0.05908353626728058, 0.7029813528060913},
                  1e-6);
}

TEST(Optim, AdamWAmsgrad) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(std::move(p),
                                   AdamWOptions(0.02).weight_decay(0.1).amsgrad(true));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.8340107994009114, -0.23053332658112932, 0.43003875992572194,
                   -0.6396950389443695, -0.10780271848602885, 0.6769973622970541},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.8340109586715698, -0.23053337633609772, 0.43003877997398376,
                   -0.6396952271461487, -0.10780272632837296, 0.6769974827766418},
                  1e-6);
}

TEST(Optim, RmspropDefault) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<RMSprop>(std::move(p), RMSpropOptions(0.01));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.6581078502662182, -0.429030034498858, 0.2740524164345959,
                   -0.47982889862555117, -0.40883708389868273, 0.6892308241662866},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.6581078767776489, -0.42903000116348267, 0.2740524709224701,
                   -0.47982892394065857, -0.40883708000183105, 0.6892308592796326},
                  1e-6);
}

TEST(Optim, RmspropCenteredMomentum) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<RMSprop>(
        std::move(p),
        RMSpropOptions(0.01).alpha(0.9).weight_decay(0.1).momentum(0.9).centered(true));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.6220171282276256, -0.24230975958500636, 0.2007604141536906,
                   -0.43560842088124563, -0.40565475383128174, 0.5745017596833801},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.6220172643661499, -0.2423097938299179, 0.20076045393943787,
                   -0.435608446598053, -0.4056547284126282, 0.5745017528533936},
                  1e-6);
}

TEST(Optim, AdagradDefault) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<Adagrad>(std::move(p), AdagradOptions(0.1));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.65932810140455, -0.42834386714349126, 0.2744302475417332, -0.4809349258268458,
                   -0.40792183380050606, 0.6883469083486405},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.6593281030654907, -0.42834389209747314, 0.2744302749633789,
                   -0.4809349477291107, -0.40792185068130493, 0.6883468627929688},
                  1e-6);
}

TEST(Optim, AdagradDecay) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<Adagrad>(
        std::move(p),
        AdagradOptions(0.1).lr_decay(0.1).weight_decay(0.1).initial_accumulator_value(0.2));
  };
  expect_near_all(run_steps(DType::f64, make),
                  {-0.7353626081699914, -0.24789044492163953, 0.347526548332535,
                   -0.5698889590612365, -0.13916162284593492, 0.6705286651583926},
                  1e-13);
  expect_near_all(run_steps(DType::f32, make),
                  {-0.7353626489639282, -0.247890442609787, 0.34752655029296875,
                   -0.5698890089988708, -0.1391616314649582, 0.6705285906791687},
                  1e-6);
}

// Three steps, numbers from the same script with range(3) (kept from the earlier SGD/AdamW tests).
TEST(Optim, SgdMaximize) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(std::move(p), SGDOptions(0.1).momentum(0.5).maximize(true));
  };
  expect_near_all(run_steps(DType::f64, make, 3),
                  {-1.089480198019802, -0.20111386138613857, 0.6872524752475249,
                   -0.8493811881188119, 0.03898514851485147, 0.8273514851485149},
                  1e-14);
}

TEST(Optim, AdamWCustomBetasFromABraceList) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(
        std::move(p), AdamWOptions(0.01).betas({0.8, 0.99}).eps(1e-6).weight_decay(0.1));
  };
  expect_near_all(run_steps(DType::f64, make, 3),
                  {-0.9081716929417247, -0.2051665812949088, 0.4930368612585231,
                   -0.7109394698167051, -0.039842765886594744, 0.6987076035261535},
                  1e-14);
}

// torch.optim.Adam([{'params': [a]}, {'params': [b], 'lr': 0.1, 'betas': (0.5, 0.5)}], lr=0.01),
// five steps with a.grad as above and b.grad = pattern(4, 13 + 3*k, 1.0), b = pattern(4, 7, 1.0).
TEST(Optim, ParamGroupsHaveTheirOwnOptions) {
  Tensor a = ag::nn::parameter(ag::from_vector(pattern(6, 3, 2.0), {2, 3}));
  Tensor b = ag::nn::parameter(ag::from_vector(pattern(4, 7, 1.0), {4}));
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b},
                      std::make_unique<AdamOptions>(AdamOptions(0.1).betas({0.5, 0.5})));
  Adam opt(groups, AdamOptions(0.01));
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.01);  // a copy of the defaults
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.1);
  for (int k = 0; k < 5; ++k) {
    a.set_grad(ag::from_vector(pattern(6, 11 + 5 * k, 1.0), {2, 3}));
    b.set_grad(ag::from_vector(pattern(4, 13 + 3 * k, 1.0), {4}));
    opt.step();
  }
  expect_near_all(a.to_vector<double>(),
                  {-0.8917887468910386, -0.2202247659100588, 0.4798089615129404,
                   -0.6946359318250122, -0.05909836671287284, 0.703335188113135},
                  1e-13);
  expect_near_all(
      b.to_vector<double>(),
      {0.06794004615830017, -0.3092458841812533, -0.19735530957750233, 0.16524943145244772}, 1e-13);
  EXPECT_EQ(opt.size(), 2u);
  EXPECT_EQ(opt.state().size(), 2u);
  const auto& sb = static_cast<const AdamParamState&>(*opt.state().at(param_key(b)));
  EXPECT_EQ(sb.step(), 5);
}

TEST(Optim, AddParamGroupAndAddParameters) {
  Tensor a = ag::nn::parameter(ag::ones({2}));
  Tensor b = ag::nn::parameter(ag::ones({2}));
  Tensor c = ag::nn::parameter(ag::ones({2}));
  SGD opt(std::vector<Tensor>{a}, SGDOptions(0.5));
  opt.add_param_group(OptimizerParamGroup({b}, std::make_unique<SGDOptions>(0.25)));
  opt.add_parameters({c});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[0].params().size(), 2u);
  for (const Tensor& p : opt.parameters()) p.set_grad(ag::full({2}, 2.0));
  opt.step();
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0.5f, 0.5f}));
  EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_THROW(opt.add_param_group(OptimizerParamGroup({a})), std::invalid_argument);
  EXPECT_THROW(opt.add_param_group(OptimizerParamGroup({ag::nn::parameter(ag::ones({1}))},
                                                       std::make_unique<AdamOptions>())),
               std::invalid_argument);
  EXPECT_EQ(opt.param_groups().size(), 2u);  // the refused groups were not added
}

TEST(Optim, StepWithClosureReturnsItsLoss) {
  Tensor w = ag::nn::parameter(ag::from_vector(std::vector<double>{3.0}, {1}));
  SGD opt(std::vector<Tensor>{w}, 0.1);
  int calls = 0;
  Tensor loss = opt.step([&] {
    ++calls;
    opt.zero_grad();
    Tensor l = (w * w).sum();  // d/dw = 2w = 6
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_DOUBLE_EQ(loss.item<double>(), 9.0);
  EXPECT_DOUBLE_EQ(w.item<double>(), 3.0 - 0.1 * 6.0);
  EXPECT_FALSE(opt.step().defined());  // no closure, no loss
}

TEST(Optim, SkipsParametersWithoutGradAndUpdatesInPlace) {
  Tensor a = ag::nn::parameter(ag::ones({2}));
  Tensor b = ag::nn::parameter(ag::ones({2}));
  SGD opt({a, b}, 0.5);
  a.set_grad(ag::full({2}, 2.0));
  uint64_t version = a.version();
  ag::TensorImpl* impl = a.impl();
  opt.step();
  EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_GT(a.version(), version);
  EXPECT_EQ(a.impl(), impl);
  EXPECT_FALSE(a.grad_fn());  // the update recorded no history
}

// LibTorch 1.13's zero_grad() zeroes in place; set_to_none clears.
TEST(Optim, ZeroGradZeroesByDefaultAsLibTorch113) {
  Tensor a = ag::nn::parameter(ag::ones({2}));
  SGD opt({a}, 0.5);
  a.set_grad(ag::full({2}, 2.0));
  Tensor g = a.grad();
  opt.zero_grad();
  ASSERT_TRUE(a.grad().defined());
  EXPECT_TRUE(a.grad().is_same(g));
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
  opt.zero_grad(/*set_to_none=*/true);
  EXPECT_FALSE(a.grad().defined());
}

TEST(Optim, TrainsALinearModelDownhill) {
  ag::manual_seed(0);
  auto model = std::make_shared<ag::nn::LinearImpl>(4, 1);
  Tensor x = ag::randn({16, 4});
  Tensor y = ag::matmul(x, ag::from_vector(std::vector<float>{1, -2, 3, 0.5}, {4, 1})) + 0.25;
  AdamW opt(model->parameters(), AdamWOptions(0.05).weight_decay(0.0));
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = ag::mse_loss((*model)(x), y);
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, first * 1e-3) << "first " << first << " last " << last;
}

TEST(Optim, RejectsBadHyperparametersAndParameters) {
  Tensor p = ag::nn::parameter(ag::ones({2}));
  EXPECT_THROW(SGD({p}, -0.1), std::invalid_argument);
  EXPECT_THROW(SGD({p}, SGDOptions(0.1).nesterov(true)), std::invalid_argument);
  EXPECT_THROW(AdamW({p}, AdamWOptions().betas({1.0, 0.9})), std::invalid_argument);
  EXPECT_THROW(Adam({p}, AdamOptions().eps(-1.0)), std::invalid_argument);
  EXPECT_THROW(RMSprop({p}, RMSpropOptions().alpha(-1.0)), std::invalid_argument);
  EXPECT_THROW(Adagrad({p}, AdagradOptions().lr_decay(-1.0)), std::invalid_argument);
  EXPECT_THROW(SGD(std::vector<Tensor>{}, 0.1), std::invalid_argument);
  EXPECT_THROW(SGD({p, p}, 0.1), std::invalid_argument);
  Tensor leaf = ag::nn::parameter(ag::ones({2}));
  try {
    SGD({p, leaf * 2.0}, 0.1);
    FAIL() << "expected an error for a non-leaf tensor";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("nn::parameter"), std::string::npos) << e.what();
  }
}

// A frozen parameter (requires_grad false) is accepted and never updated, as in PyTorch.
TEST(Optim, FrozenParametersAreAcceptedAndSkipped) {
  Tensor frozen = ag::ones({2});
  Tensor live = ag::nn::parameter(ag::ones({2}));
  Adam opt({frozen, live}, AdamOptions(0.1));
  live.set_grad(ag::ones({2}));
  opt.step();
  EXPECT_EQ(frozen.to_vector<float>(), (std::vector<float>{1.0f, 1.0f}));
  EXPECT_NE(live.to_vector<float>()[0], 1.0f);
}
