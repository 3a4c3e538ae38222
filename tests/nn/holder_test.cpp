// Module holders (TORCH_MODULE), LibTorch's registration calls and what named_parameters() and
// the other walks return, and how modules print.
#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;

namespace {

// The shape of pytorch/examples' mnist Net: holders as members, registered in the constructor.
struct NetImpl : nn::Module {
  NetImpl()
      : conv1(nn::Conv2dOptions(1, 4, /*kernel_size=*/3)),
        fc1(4 * 2 * 2, 5),
        fc2(nn::LinearOptions(5, 3).bias(false)) {
    register_module("conv1", conv1);
    register_module("drop", drop);
    fc1 = register_module("fc1", fc1);
    register_module("fc2", fc2);
    scale = register_parameter("scale", ag::ones({3}));
    register_buffer("steps", ag::zeros({1}));
  }
  // LibTorch's usual spelling: by value, no override (Module::forward is not virtual).
  Tensor forward(Tensor input) {
    Tensor x = ag::relu(ag::max_pool2d(conv1(input), {2}));
    x = drop(x).reshape({x.size(0), -1});
    return fc2(ag::relu(fc1(x))) * scale;
  }
  nn::Conv2d conv1;
  nn::Dropout drop;  // default-constructed by its holder, as LibTorch does
  nn::Linear fc1, fc2;
  Tensor scale;
};
TORCH_MODULE(Net);

// Holders only.
struct BlockImpl : nn::Module {
  BlockImpl() : conv(nn::Conv2dOptions(2, 3, 3).padding(1)), bn(3), fc(3 * 4 * 4, 2) {
    register_module("conv", conv);
    register_module("bn", bn);
    register_module("fc", fc);
  }
  Tensor forward(const Tensor& input) {
    Tensor x = ag::relu(bn(conv(input)));
    return fc(x.reshape({x.size(0), -1}));
  }
  nn::Conv2d conv;
  nn::BatchNorm2d bn;
  nn::Linear fc;
};
TORCH_MODULE(Block);

}  // namespace

TEST(NnHolder, CopiesShareTheModuleAndNullptrIsEmpty) {
  nn::Linear fc(3, 4);
  nn::Linear same = fc;
  EXPECT_EQ(same.get(), fc.get());
  EXPECT_TRUE(same->weight.is_same(fc->weight));
  EXPECT_EQ(fc->weight.sizes(), (ag::IntList{4, 3}));
  Tensor y = fc(ag::ones({2, 3}));
  EXPECT_EQ(y.sizes(), (ag::IntList{2, 4}));

  nn::Linear empty = nullptr;
  EXPECT_TRUE(empty.is_empty());
  EXPECT_FALSE(static_cast<bool>(empty));
  std::string error = ag::testing::error_of<std::logic_error>([&] { (void)empty->weight; });
  EXPECT_NE(error.find("LinearImpl"), std::string::npos) << error;
  EXPECT_NE(error.find("empty"), std::string::npos) << error;
  empty = fc;
  EXPECT_EQ(empty.ptr(), fc.ptr());

  // A holder also wraps an existing shared_ptr, and converts back through ptr().
  auto impl = std::make_shared<nn::LinearImpl>(2, 2);
  nn::Linear wrapped(impl);
  EXPECT_EQ(wrapped.ptr(), impl);
}

TEST(NnHolder, RegistrationNamesAndOrderedDicts) {
  Net net;
  auto params = net->named_parameters();
  EXPECT_EQ(params.keys(), (std::vector<std::string>{"scale", "conv1.weight", "conv1.bias",
                                                     "fc1.weight", "fc1.bias", "fc2.weight"}));
  EXPECT_TRUE(params["fc1.weight"].is_same(net->fc1->weight));
  EXPECT_TRUE(params[1].value().is_same(net->conv1->weight));
  EXPECT_EQ(params[1].key(), "conv1.weight");
  EXPECT_TRUE(params.find("scale") != nullptr);
  EXPECT_TRUE(params.find("fc2.bias") == nullptr);  // bias(false): no slot listed
  EXPECT_THROW(params["nope"], std::out_of_range);
  EXPECT_TRUE(net->scale.is_same(params["scale"]));
  EXPECT_TRUE(net->scale.requires_grad());
  EXPECT_EQ(net->parameters().size(), 6u);
  EXPECT_EQ(net->named_parameters(/*recurse=*/false).keys(), (std::vector<std::string>{"scale"}));
  EXPECT_EQ(net->named_buffers().keys(), (std::vector<std::string>{"steps"}));
  EXPECT_FALSE(net->named_buffers()["steps"].requires_grad());

  EXPECT_EQ(net->named_children().keys(),
            (std::vector<std::string>{"conv1", "drop", "fc1", "fc2"}));
  ASSERT_EQ(net->children().size(), 4u);
  EXPECT_EQ(net->children()[2].get(), net->fc1.get());
  auto modules = net->named_modules();
  EXPECT_EQ(modules.keys(), (std::vector<std::string>{"", "conv1", "drop", "fc1", "fc2"}));
  EXPECT_EQ(modules[""].get(), net.get());
  EXPECT_EQ(net->modules(/*include_self=*/false).size(), 4u);
  // Structured bindings over the dict still work, as over the vector of pairs before.
  std::vector<std::string> names;
  for (const auto& [name, t] : net->named_parameters()) names.push_back(name);
  EXPECT_EQ(names.size(), 6u);

  std::string error = ag::testing::error_of<std::invalid_argument>(
      [&] { net->register_parameter("scale", ag::ones({1})); });
  EXPECT_NE(error.find("'scale' is already registered"), std::string::npos) << error;
  error = ag::testing::error_of<std::invalid_argument>(
      [&] { net->register_parameter("idx", ag::zeros({2}, ag::DType::i64)); });
  EXPECT_NE(error.find("requires_grad = false"), std::string::npos) << error;
  // requires_grad = false registers a parameter that takes no gradient.
  Tensor frozen = net->register_parameter("frozen", ag::ones({2}), /*requires_grad=*/false);
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_TRUE(net->named_parameters()["frozen"].is_same(frozen));
}

TEST(NnHolder, TrainEvalZeroGradAndStackModules) {
  Net net;
  EXPECT_TRUE(net->drop->is_training());
  net->eval();
  EXPECT_FALSE(net->is_training());
  EXPECT_FALSE(net->drop->is_training());
  net->train();
  EXPECT_TRUE(net->fc2->is_training());

  ag::manual_seed(0);
  net->forward(ag::randn({2, 1, 6, 6})).sum().backward();
  EXPECT_TRUE(net->fc1->weight.grad().defined());
  net->zero_grad();
  for (const Tensor& p : net->parameters()) EXPECT_FALSE(p.grad().defined());

  // A module on the stack (`Net model;` of a plain nn::Module subclass) names itself without
  // owning itself.
  NetImpl local;
  auto modules = local.named_modules();
  EXPECT_EQ(modules[""].get(), &local);
  EXPECT_EQ(modules.size(), 5u);
}

TEST(NnHolder, SequentialTakesHoldersImplsAndFunctionals) {
  ag::manual_seed(1);
  nn::Linear first(3, 4);
  nn::Sequential seq(first, nn::ReLU(), std::make_shared<nn::LinearImpl>(4, 2),
                     nn::Functional([](Tensor x) { return x * 2.0; }));
  seq->push_back(
      nn::Functional(static_cast<Tensor (*)(const Tensor&, int64_t)>(ag::softmax), int64_t{1}));
  seq->push_back("last", nn::Sigmoid());
  ASSERT_EQ(seq->size(), 6u);
  EXPECT_EQ(seq[0].get(), first.get());
  EXPECT_EQ(seq->at<nn::LinearImpl>(2).weight.sizes(), (ag::IntList{2, 4}));
  EXPECT_THROW(seq->at<nn::LinearImpl>(1), std::invalid_argument);
  EXPECT_THROW(seq[6], std::out_of_range);
  EXPECT_EQ(seq->named_children().keys(),
            (std::vector<std::string>{"0", "1", "2", "3", "4", "last"}));

  Tensor x = ag::randn({5, 3});
  Tensor h = seq->at<nn::LinearImpl>(2).forward(ag::relu(first(x)));
  Tensor want = ag::sigmoid(ag::softmax(h * 2.0, 1));
  EXPECT_TRUE(ag::testing::allclose(seq->forward(x), want, 1e-6, 1e-6));
  EXPECT_TRUE(ag::testing::allclose(seq(x), want, 1e-6, 1e-6));
}

TEST(NnHolder, ModulesPrintAsLibTorchDoes) {
  nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(1, 64, 4).stride(2).padding(1).bias(false)),
                     nn::BatchNorm2d(64), nn::Linear(3, 4), nn::Dropout(0.2), nn::ReLU());
  std::ostringstream os;
  os << seq;
  EXPECT_EQ(os.str(),
            "torch::nn::Sequential(\n"
            "  (0): torch::nn::Conv2d(1, 64, kernel_size=[4, 4], stride=[2, 2], padding=[1, 1], "
            "bias=false)\n"
            "  (1): torch::nn::BatchNorm2d(64, eps=1e-05, momentum=0.1, affine=true, "
            "track_running_stats=true)\n"
            "  (2): torch::nn::Linear(in_features=3, out_features=4, bias=true)\n"
            "  (3): torch::nn::Dropout(p=0.2, inplace=false)\n"
            "  (4): torch::nn::ReLU()\n"
            ")");
  std::ostringstream user;
  user << *Net().ptr();
  EXPECT_EQ(user.str().substr(0, user.str().find('\n')), "(anonymous namespace)::NetImpl(");
}

TEST(NnHolder, AotModuleOfAHolderModelMatchesEager) {
  auto make = [] {
    ag::manual_seed(7);
    return Block();
  };
  Block eager = make(), compiled_net = make();
  auto compiled = ag::aot_module(compiled_net);
  ag::manual_seed(3);
  Tensor x = ag::randn({2, 2, 4, 4});
  Tensor want = eager->forward(x);
  Tensor got = compiled(x);
  EXPECT_TRUE(ag::testing::allclose(got, want, 1e-5, 1e-5));
  want.sum().backward();
  got.sum().backward();
  auto eager_params = eager->named_parameters();
  auto compiled_params = compiled_net->named_parameters();
  for (size_t i = 0; i < eager_params.size(); ++i)
    EXPECT_TRUE(ag::testing::allclose(compiled_params[i].value().grad(),
                                      eager_params[i].value().grad(), 1e-5, 1e-5))
        << eager_params[i].key();
  EXPECT_EQ(compiled.num_compilations(), 1u);
  // BatchNorm's running statistics were updated in place by both, identically.
  EXPECT_TRUE(
      ag::testing::allclose(compiled_net->bn->running_var, eager->bn->running_var, 1e-6, 1e-6));
  EXPECT_EQ(compiled_net->bn->num_batches_tracked.item<int64_t>(), 1);
}
