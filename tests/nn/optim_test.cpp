// Optimizers against torch.optim (1.13, single-tensor path): three steps on a [2, 3] parameter
// with fixed gradients; the expected parameters were printed by PyTorch (script in the comment
// below) and pasted here.
//
//   def pattern(n, phase, scale): return [(((i*37 + phase) % 101) / 101.0 - 0.5) * scale for i in
//   range(n)] p = torch.tensor(pattern(6, 3, 2.0), dtype=dt).reshape(2, 3).requires_grad_(); opt =
//   <optimizer>([p]) for k in range(3): p.grad = torch.tensor(pattern(6, 11 + 5*k, 1.0),
//   dtype=dt).reshape(2, 3); opt.step()
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::DType;
using ag::Tensor;
using ag::optim::AdamW;
using ag::optim::SGD;

namespace {

std::vector<double> pattern(int n, int phase, double scale) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back((((i * 37 + phase) % 101) / 101.0 - 0.5) * scale);
  return v;
}

// Runs three steps of the optimizer `make` builds and returns the parameter's values.
template <typename Make>
std::vector<double> three_steps(DType dtype, Make make) {
  Tensor p = ag::nn::parameter(ag::from_vector(pattern(6, 3, 2.0), {2, 3}).to(dtype));
  auto opt = make(std::vector<Tensor>{p});
  for (int k = 0; k < 3; ++k) {
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
  expect_near_all(three_steps(DType::f64, make),
                  {-0.838118811881188, -0.21534653465346532, 0.4074257425742575,
                   -0.6698019801980197, -0.047029702970297044, 0.6757425742574257},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-0.8381187915802002, -0.2153465300798416, 0.40742579102516174,
                   -0.6698019504547119, -0.047029703855514526, 0.6757425665855408},
                  2e-7);
}

TEST(Optim, SgdMomentumDampeningWeightDecay) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(
        std::move(p), 0.1,
        ag::optim::SGDOptions{.momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01});
  };
  expect_near_all(three_steps(DType::f64, make),
                  {-0.7450722977579207, -0.21102991198504945, 0.32301247378782183,
                   -0.6007365178193068, -0.06669413204643564, 0.5573482537264356},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-0.7450723052024841, -0.21102991700172424, 0.32301250100135803,
                   -0.6007365584373474, -0.06669412553310394, 0.5573483109474182},
                  2e-7);
}

TEST(Optim, SgdNesterov) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(
        std::move(p), 0.05,
        ag::optim::SGDOptions{.momentum = 0.8, .weight_decay = 0.1, .nesterov = true});
  };
  expect_near_all(three_steps(DType::f64, make),
                  {-0.7824998692079207, -0.20658994124752472, 0.36931998671287136,
                   -0.6268485373267326, -0.05093860936633664, 0.6149713185940593},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-0.7824998497962952, -0.2065899521112442, 0.36932000517845154,
                   -0.6268485188484192, -0.05093860626220703, 0.6149712800979614},
                  2e-7);
}

TEST(Optim, SgdMaximize) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<SGD>(std::move(p), 0.1,
                                 ag::optim::SGDOptions{.momentum = 0.5, .maximize = true});
  };
  expect_near_all(three_steps(DType::f64, make),
                  {-1.089480198019802, -0.20111386138613857, 0.6872524752475249,
                   -0.8493811881188119, 0.03898514851485147, 0.8273514851485149},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-1.0894802808761597, -0.20111384987831116, 0.6872524619102478,
                   -0.8493812680244446, 0.03898514807224274, 0.8273515105247498},
                  2e-7);
}

TEST(Optim, AdamWDefaults) {
  auto make = [](std::vector<Tensor> p) { return std::make_unique<AdamW>(std::move(p)); };
  expect_near_all(three_steps(DType::f64, make),
                  {-0.9375885869339429, -0.20756245047686503, 0.5217320781040754,
                   -0.7395886622262119, -0.012860464163454809, 0.7204808915634799},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-0.9375885725021362, -0.2075624316930771, 0.5217320919036865,
                   -0.7395886778831482, -0.012860464863479137, 0.7204809188842773},
                  2e-7);
}

TEST(Optim, AdamWCustom) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(
        std::move(p),
        ag::optim::AdamWOptions{
            .lr = 0.01, .beta1 = 0.8, .beta2 = 0.99, .eps = 1e-6, .weight_decay = 0.1});
  };
  expect_near_all(three_steps(DType::f64, make),
                  {-0.9081716929417247, -0.2051665812949088, 0.4930368612585231,
                   -0.7109394698167051, -0.039842765886594744, 0.6987076035261535},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-0.9081717133522034, -0.20516657829284668, 0.4930368661880493,
                   -0.7109394669532776, -0.039842769503593445, 0.698707640171051},
                  2e-7);
}

TEST(Optim, AdamWAmsgrad) {
  auto make = [](std::vector<Tensor> p) {
    return std::make_unique<AdamW>(std::move(p),
                                   ag::optim::AdamWOptions{.lr = 0.02, .amsgrad = true});
  };
  expect_near_all(three_steps(DType::f64, make),
                  {-0.8804960943876293, -0.20076138293267212, 0.4643559961079348,
                   -0.6828738028321261, -0.06907913870686506, 0.6769560506928423},
                  1e-14);
  expect_near_all(three_steps(DType::f32, make),
                  {-0.8804961442947388, -0.20076140761375427, 0.46435603499412537,
                   -0.6828739047050476, -0.06907913833856583, 0.6769561171531677},
                  2e-7);
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
  opt.zero_grad();
  EXPECT_FALSE(a.grad().defined());
  a.set_grad(ag::full({2}, 2.0));
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_EQ(a.grad().to_vector<float>(), (std::vector<float>{0.0f, 0.0f}));
}

TEST(Optim, TrainsALinearModelDownhill) {
  ag::manual_seed(0);
  auto model = std::make_shared<ag::nn::LinearImpl>(4, 1);
  Tensor x = ag::randn({16, 4});
  Tensor y = ag::matmul(x, ag::from_vector(std::vector<float>{1, -2, 3, 0.5}, {4, 1})) + 0.25;
  AdamW opt(model->parameters(), {.lr = 0.05, .weight_decay = 0.0});
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
  EXPECT_THROW(SGD({p}, 0.1, {.nesterov = true}), std::invalid_argument);
  EXPECT_THROW(AdamW({p}, {.beta1 = 1.0}), std::invalid_argument);
  EXPECT_THROW(AdamW({p}, {.eps = -1.0}), std::invalid_argument);
  EXPECT_THROW(SGD({}, 0.1), std::invalid_argument);
  EXPECT_THROW(SGD({p, p}, 0.1), std::invalid_argument);
  try {
    SGD({ag::ones({2})}, 0.1);
    FAIL() << "expected an error for a tensor that does not require grad";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("nn::parameter"), std::string::npos) << e.what();
  }
}
