// nn::Module: hierarchical names, deduplication, training flags, zero_grad, dtype casts, the
// containers, registration errors, and the default initialisations' statistics.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::DType;
using ag::Tensor;

namespace {

std::vector<std::string> names_of(const nn::NamedTensors& named) {
  std::vector<std::string> out;
  for (const auto& [name, t] : named) out.push_back(name);
  return out;
}

// A module with its own parameter, a buffer, a child and an absent (undefined) parameter.
class Net : public nn::Module {
 public:
  Net() {
    scale = nn::parameter(ag::ones({3}));
    register_parameter("scale", scale);
    register_parameter("missing", missing);
    steps = ag::zeros({}, DType::i64);
    register_buffer("steps", steps);
    body = register_module(
        "body", std::make_shared<nn::SequentialImpl>(std::vector<std::shared_ptr<nn::Module>>{
                    std::make_shared<nn::LinearImpl>(3, 4), std::make_shared<nn::GELUImpl>(),
                    std::make_shared<nn::LinearImpl>(4, 3, /*bias=*/false)}));
  }
  std::string type_name() const override { return "Net"; }
  Tensor forward(const Tensor& x) { return body->forward(x) * scale; }
  Tensor scale, missing, steps;
  std::shared_ptr<nn::SequentialImpl> body;
};

// Shares one Linear under two names and ties a parameter to another module's.
class Tied : public nn::Module {
 public:
  Tied() {
    auto shared = std::make_shared<nn::LinearImpl>(2, 2);
    a = register_module("a", shared);
    b = register_module("b", shared);
    head = nn::parameter(ag::zeros({2}));
    register_parameter("head", head);
    also_head = head;
    register_parameter("also_head", also_head);
  }
  std::shared_ptr<nn::LinearImpl> a, b;
  Tensor head, also_head;
};

class Leaf : public nn::Module {
 public:
  Tensor w;
  void add(const std::string& name) {
    w = nn::parameter(ag::ones({1}));
    register_parameter(name, w);
  }
};

}  // namespace

TEST(NnModule, HierarchicalNamesInRegistrationOrder) {
  Net net;
  EXPECT_EQ(names_of(net.named_parameters()),
            (std::vector<std::string>{"scale", "body.0.weight", "body.0.bias", "body.2.weight"}));
  EXPECT_EQ(names_of(net.named_buffers()), (std::vector<std::string>{"steps"}));
  EXPECT_EQ(net.parameters().size(), 4u);
  EXPECT_TRUE(net.parameters()[1].is_same(
      std::static_pointer_cast<nn::LinearImpl>(net.body->named_children()[0].second)->weight));
  std::vector<std::string> modules;
  for (const auto& [name, m] : net.named_modules()) modules.push_back(name + ":" + m->type_name());
  EXPECT_EQ(modules, (std::vector<std::string>{":Net", "body:Sequential", "body.0:Linear",
                                               "body.1:GELU", "body.2:Linear"}));
  for (const Tensor& p : net.parameters()) {
    EXPECT_TRUE(p.is_leaf());
    EXPECT_TRUE(p.requires_grad());
  }
}

TEST(NnModule, NamedParametersReadTheCurrentSlotValue) {
  nn::LinearImpl lin(2, 2);
  Tensor replacement = nn::parameter(ag::zeros({2, 2}));
  lin.weight = replacement;
  EXPECT_TRUE(lin.named_parameters()[0].second.is_same(replacement));
}

TEST(NnModule, SharedModulesAndTiedParametersAreListedOnce) {
  Tied m;
  EXPECT_EQ(names_of(m.named_parameters()),
            (std::vector<std::string>{"head", "a.weight", "a.bias"}));
  nn::TensorSlots slots = m.parameter_slots();
  ASSERT_EQ(slots.slots.size(), 3u);
  EXPECT_EQ(slots.slots[0].size(), 2u);  // head and also_head
  EXPECT_EQ(slots.slots[1].size(), 2u);  // a.weight reached through a and b
}

TEST(NnModule, TrainEvalPropagates) {
  Net net;
  EXPECT_TRUE(net.is_training());
  net.eval();
  for (const auto& [name, m] : net.named_modules()) EXPECT_FALSE(m->is_training()) << name;
  net.train();
  for (const auto& [name, m] : net.named_modules()) EXPECT_TRUE(m->is_training()) << name;
}

TEST(NnModule, ForwardBackwardAndZeroGrad) {
  ag::manual_seed(1);
  Net net;
  Tensor y = net.forward(ag::randn({5, 3}));
  EXPECT_EQ(y.sizes(), (ag::IntList{5, 3}));
  y.sum().backward();
  for (const auto& [name, p] : net.named_parameters()) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_EQ(p.grad().sizes(), p.sizes()) << name;
  }
  net.zero_grad(/*set_to_none=*/false);
  for (const auto& [name, p] : net.named_parameters())
    for (float g : p.grad().to_vector<float>()) EXPECT_EQ(g, 0.0f) << name;
  net.zero_grad();
  for (const auto& [name, p] : net.named_parameters()) EXPECT_FALSE(p.grad().defined()) << name;
}

TEST(NnModule, ToCastsFloatingParametersAndBuffersOnly) {
  Net net;
  net.to(DType::f64);
  for (const auto& [name, p] : net.named_parameters()) {
    EXPECT_EQ(p.dtype(), DType::f64) << name;
    EXPECT_TRUE(p.is_leaf() && p.requires_grad()) << name;
  }
  EXPECT_EQ(net.steps.dtype(), DType::i64);
  EXPECT_EQ(net.forward(ag::ones({1, 3}, DType::f64)).dtype(), DType::f64);
}

TEST(NnModule, RegistrationErrorsNameTheProblem) {
  Leaf leaf;
  leaf.add("w");
  EXPECT_THROW(leaf.add("w"), std::invalid_argument);
  EXPECT_THROW(leaf.add("a.b"), std::invalid_argument);
  EXPECT_THROW(leaf.add(""), std::invalid_argument);
  try {
    leaf.forward(ag::ones({1}));
    FAIL() << "expected an error";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("no single-tensor forward"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(nn::parameter(ag::ones({2}, DType::i64)), std::invalid_argument);
  EXPECT_NO_THROW(nn::parameter(ag::ones({2}, DType::i64), /*requires_grad=*/false));
}

TEST(NnModule, ContainersChainAndIndex) {
  nn::ModuleListImpl list;
  list.push_back(std::make_shared<nn::ReLUImpl>());
  list.push_back(std::make_shared<nn::GELUImpl>("tanh"));
  EXPECT_EQ(list.size(), 2u);
  EXPECT_EQ(list[1]->type_name(), "GELU");
  EXPECT_THROW(list[2], std::out_of_range);
  EXPECT_THROW(list.forward(ag::ones({1})), std::logic_error);
  nn::SequentialImpl seq(std::make_shared<nn::ReLUImpl>(), std::make_shared<nn::ReLUImpl>());
  EXPECT_EQ(seq(ag::from_vector(std::vector<float>{-1, 2}, {2})).to_vector<float>(),
            (std::vector<float>{0, 2}));
}

// ---- initialisation ----

TEST(NnInit, LinearAndConvBoundsAreOneOverSqrtFanIn) {
  ag::manual_seed(123);
  nn::LinearImpl lin(64, 200);
  double bound = 1.0 / std::sqrt(64.0);
  std::vector<float> w = lin.weight.to_vector<float>();
  double lo = 1, hi = -1, mean = 0;
  for (float v : w) {
    lo = std::min<double>(lo, v);
    hi = std::max<double>(hi, v);
    mean += v;
  }
  mean /= static_cast<double>(w.size());
  EXPECT_GE(lo, -bound);
  EXPECT_LE(hi, bound);
  // 12800 draws from U(-b, b): the extremes come within 1% of the bound, the mean near zero.
  EXPECT_LT(lo, -0.99 * bound);
  EXPECT_GT(hi, 0.99 * bound);
  EXPECT_NEAR(mean, 0.0, 0.02 * bound);
  for (float v : lin.bias.to_vector<float>()) EXPECT_LE(std::abs(v), bound);
}

TEST(NnInit, KaimingUniformGainAndFans) {
  Tensor w = ag::empty({16, 8, 3, 3});
  auto [fan_in, fan_out] = nn::init::calculate_fan_in_and_fan_out(w);
  EXPECT_EQ(fan_in, 72);
  EXPECT_EQ(fan_out, 144);
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("relu"), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3.0);
  EXPECT_THROW(nn::init::calculate_gain("swish"), std::invalid_argument);
  nn::init::kaiming_uniform_(w, 0.0, "fan_out", "relu");
  double bound = std::sqrt(2.0) * std::sqrt(3.0 / 144.0);
  for (float v : w.to_vector<float>()) EXPECT_LE(std::abs(v), bound);
  EXPECT_THROW(nn::init::calculate_fan_in_and_fan_out(ag::empty({3})), std::invalid_argument);
}

TEST(NnInit, NormalStatisticsAndSeededReproducibility) {
  Tensor t = ag::empty({100000}, DType::f64);
  ag::manual_seed(7);
  nn::init::normal_(t, 2.0, 0.5);
  std::vector<double> v = t.to_vector<double>();
  double mean = 0, var = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size() - 1);
  EXPECT_NEAR(mean, 2.0, 0.01);
  EXPECT_NEAR(std::sqrt(var), 0.5, 0.01);
  ag::manual_seed(7);
  Tensor again = ag::empty({100000}, DType::f64);
  nn::init::normal_(again, 2.0, 0.5);
  EXPECT_EQ(again.to_vector<double>(), v);
  ag::Generator gen(99);
  Tensor u = ag::empty({1000});
  nn::init::uniform_(u, -3.0, -2.0, &gen);
  for (float x : u.to_vector<float>()) EXPECT_TRUE(x >= -3.0f && x <= -2.0f) << x;
  EXPECT_FALSE(u.requires_grad());
}

TEST(NnInit, SameSeedSameModel) {
  ag::manual_seed(5);
  nn::LinearImpl a(8, 8);
  ag::manual_seed(5);
  nn::LinearImpl b(8, 8);
  EXPECT_EQ(a.weight.to_vector<float>(), b.weight.to_vector<float>());
  EXPECT_EQ(a.bias.to_vector<float>(), b.bias.to_vector<float>());
}

TEST(NnModule, StateDictRoundTrip) {
  ag::manual_seed(1);
  Net a;
  ag::manual_seed(2);
  Net b;
  nn::NamedTensors state = a.state_dict();
  EXPECT_EQ(names_of(state), (std::vector<std::string>{"scale", "body.0.weight", "body.0.bias",
                                                       "body.2.weight", "steps"}));
  Tensor weight_before = b.body->named_children()[0].second->parameters()[0];
  b.load_state_dict(state);
  Tensor x = ag::randn({2, 3});
  EXPECT_EQ(b.forward(x).to_vector<float>(), a.forward(x).to_vector<float>());
  EXPECT_TRUE(b.parameters()[1].is_same(weight_before));  // copied in place
  EXPECT_TRUE(weight_before.requires_grad());
  state.pop_back();
  EXPECT_THROW(b.load_state_dict(state), std::invalid_argument);
  EXPECT_NO_THROW(b.load_state_dict(state, /*strict=*/false));
  state.emplace_back("extra", ag::ones({1}));
  EXPECT_THROW(b.load_state_dict(state), std::invalid_argument);
  nn::NamedTensors wrong = {{"scale", ag::ones({4})}};
  EXPECT_THROW(b.load_state_dict(wrong, false), std::invalid_argument);
}
