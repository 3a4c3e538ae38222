// Learning-rate schedulers. The expected lrs of ExponentialLR, MultiStepLR, CosineAnnealingLR and
// LambdaLR were printed by PyTorch 1.13 (/usr/bin/python3) and pasted here:
//
//   p = torch.zeros(1, requires_grad=True); opt = torch.optim.SGD([p], lr=0.1)
//   s = <scheduler>(opt, <arguments as in each test>)
//   for k in range(12): opt.step(); s.step(); print(opt.param_groups[0]['lr'])
//
// StepLR follows LibTorch 1.13's StepLR::get_lrs (its n-th step(), n from 0, decays when n is a
// positive multiple of step_size), worked out by hand.
#include <gtest/gtest.h>

#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "aotgrad/optim/optimizers.h"
#include "aotgrad/optim/schedulers.h"

namespace ag = aotgrad;
using ag::Tensor;
using namespace ag::optim;  // NOLINT: the schedulers

namespace {

// The lr of each param group after each of `n` step() calls.
template <typename Make>
std::vector<double> lrs(Make make, int n = 12) {
  Tensor p = ag::nn::parameter(ag::zeros({1}));
  SGD opt({p}, 0.1);
  auto sched = make(opt);
  std::vector<double> out;
  for (int k = 0; k < n; ++k) {
    opt.step();
    sched->step();
    out.push_back(opt.param_groups()[0].options().get_lr());
  }
  return out;
}

void expect_near_all(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-15) << "step " << i;
}

}  // namespace

TEST(Scheduler, StepLRAsLibTorch) {
  expect_near_all(lrs([](Optimizer& o) { return std::make_unique<StepLR>(o, 3, 0.5); }),
                  {0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025, 0.0125, 0.0125, 0.0125});
}

TEST(Scheduler, ExponentialLR) {
  expect_near_all(
      lrs([](Optimizer& o) { return std::make_unique<ExponentialLR>(o, 0.9); }),
      {0.09000000000000001, 0.08100000000000002, 0.07290000000000002, 0.06561000000000002,
       0.05904900000000002, 0.05314410000000002, 0.04782969000000002, 0.043046721000000024,
       0.03874204890000002, 0.03486784401000002, 0.03138105960900001, 0.028242953648100012});
}

TEST(Scheduler, MultiStepLRCountsRepeatedMilestones) {
  expect_near_all(
      lrs([](Optimizer& o) {
        return std::make_unique<MultiStepLR>(o, std::vector<int64_t>{2, 5, 5, 9}, 0.5);
      }),
      {0.1, 0.05, 0.05, 0.05, 0.0125, 0.0125, 0.0125, 0.0125, 0.00625, 0.00625, 0.00625, 0.00625});
}

TEST(Scheduler, CosineAnnealingLR) {
  expect_near_all(
      lrs([](Optimizer& o) { return std::make_unique<CosineAnnealingLR>(o, 4, 0.01); }),
      {0.08681980515339464, 0.05500000000000001, 0.023180194846605363, 0.01, 0.023180194846605363,
       0.05500000000000002, 0.08681980515339469, 0.10000000000000006, 0.0868198051533947,
       0.05500000000000005, 0.023180194846605412, 0.01});
}

TEST(Scheduler, LambdaLRAppliesEpochZeroWhenMade) {
  Tensor p = ag::nn::parameter(ag::zeros({1}));
  SGD opt({p}, 0.1);
  LambdaLR made(opt, [](unsigned e) { return 1.0 / (e + 1); });
  EXPECT_EQ(opt.param_groups()[0].options().get_lr(), 0.1);  // lambda(0) = 1
  expect_near_all(lrs([](Optimizer& o) {
                    return std::make_unique<LambdaLR>(o, [](unsigned e) { return 1.0 / (e + 1); });
                  }),
                  {0.05, 0.03333333333333333, 0.025, 0.020000000000000004, 0.016666666666666666,
                   0.014285714285714285, 0.0125, 0.011111111111111112, 0.010000000000000002,
                   0.009090909090909092, 0.008333333333333333, 0.007692307692307693});
}

// Each group keeps its own lr, set through options().set_lr() as LibTorch exposes it.
TEST(Scheduler, EveryParamGroupIsScheduled) {
  Tensor a = ag::nn::parameter(ag::zeros({1}));
  Tensor b = ag::nn::parameter(ag::zeros({1}));
  std::vector<OptimizerParamGroup> groups;
  groups.emplace_back(std::vector<Tensor>{a});
  groups.emplace_back(std::vector<Tensor>{b}, std::make_unique<AdamOptions>(0.5));
  Adam opt(groups, AdamOptions(0.1));
  ExponentialLR sched(opt, 0.5);
  sched.step();
  sched.step();
  EXPECT_EQ(sched.get_last_lr(), (std::vector<double>{0.025, 0.125}));
  EXPECT_EQ(static_cast<AdamOptions&>(opt.param_groups()[1].options()).lr(), 0.125);
}
