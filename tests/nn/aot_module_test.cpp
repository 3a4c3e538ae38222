// aot_module == eager: the same model (built twice from one seed) runs eagerly and through
// aot_module; outputs, every parameter's gradient, the input's gradient and every buffer after
// the call must agree. Also: what the compiled module caches on, and that tracing leaves the
// module's own tensors in place.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::DType;
using ag::Tensor;
using ag::testing::allclose;

namespace {

struct Tol {
  double atol = 1e-5, rtol = 1e-4;
};

void expect_close(const Tensor& got, const Tensor& want, Tol tol, const std::string& what) {
  ASSERT_EQ(got.defined(), want.defined()) << what;
  if (!want.defined()) return;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_TRUE(allclose(got, want, tol.atol, tol.rtol))
      << what << "\ngot  " << got << "\nwant " << want;
}

// Builds two identical models from one seed, runs `calls` training calls on each (eager and
// compiled), with a loss that weights every output element differently, and compares.
template <typename M>
ag::AotModule<M> expect_aot_module_matches_eager(const std::function<std::shared_ptr<M>()>& make,
                                                 const Tensor& input, Tol tol = {}, int calls = 2) {
  ag::manual_seed(42);
  std::shared_ptr<M> eager = make();
  ag::manual_seed(42);
  std::shared_ptr<M> model = make();
  auto compiled = ag::aot_module(model);
  for (int call = 0; call < calls; ++call) {
    std::string at = " (call " + std::to_string(call) + ")";
    Tensor x_eager = input.detach().requires_grad_(input.requires_grad());
    Tensor x_compiled = input.detach().requires_grad_(input.requires_grad());
    Tensor y_eager = eager->forward(x_eager);
    Tensor y_compiled = compiled(x_compiled);
    expect_close(y_compiled, y_eager, tol, "output" + at);
    EXPECT_EQ(y_compiled.requires_grad(), y_eager.requires_grad()) << at;
    if (y_eager.requires_grad()) {
      Tensor weights = ag::randn(y_eager.sizes(), y_eager.dtype());
      (y_eager * weights).sum().backward();
      (y_compiled * weights).sum().backward();
      auto pe = eager->named_parameters();
      auto pc = model->named_parameters();
      EXPECT_EQ(pe.size(), pc.size());
      if (pe.size() != pc.size()) return compiled;
      for (size_t i = 0; i < pe.size(); ++i)
        expect_close(pc[i].second.grad(), pe[i].second.grad(), tol, "grad of " + pe[i].first + at);
      if (input.requires_grad())
        expect_close(x_compiled.grad(), x_eager.grad(), tol, "grad of the input" + at);
    }
    auto be = eager->named_buffers();
    auto bc = model->named_buffers();
    EXPECT_EQ(be.size(), bc.size());
    if (be.size() != bc.size()) return compiled;
    for (size_t i = 0; i < be.size(); ++i) {
      EXPECT_FALSE(bc[i].second.is_fake()) << bc[i].first;
      expect_close(bc[i].second, be[i].second, tol,
                   "buffer " + be[i].first + " after the call" + at);
    }
  }
  for (const auto& [name, p] : model->named_parameters()) EXPECT_FALSE(p.is_fake()) << name;
  EXPECT_EQ(compiled.num_compilations(), 1u);
  return compiled;
}

std::shared_ptr<nn::SequentialImpl> make_mlp() {
  return std::make_shared<nn::SequentialImpl>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::LinearImpl>(6, 16), std::make_shared<nn::GELUImpl>(),
      std::make_shared<nn::LinearImpl>(16, 16), std::make_shared<nn::GELUImpl>("tanh"),
      std::make_shared<nn::LinearImpl>(16, 3)});
}

// A ResNet basic block: relu(bn2(conv2(relu(bn1(conv1(x))))) + x).
class BasicBlock : public nn::Module {
 public:
  explicit BasicBlock(int64_t c) {
    conv1 = register_module(
        "conv1", std::make_shared<nn::Conv2dImpl>(c, c, ag::IntList{3}, ag::IntList{1},
                                                  ag::IntList{1}, ag::IntList{1}, 1, false));
    bn1 = register_module("bn1", std::make_shared<nn::BatchNorm2dImpl>(c));
    conv2 = register_module(
        "conv2", std::make_shared<nn::Conv2dImpl>(c, c, ag::IntList{3}, ag::IntList{1},
                                                  ag::IntList{1}, ag::IntList{1}, 1, false));
    bn2 = register_module("bn2", std::make_shared<nn::BatchNorm2dImpl>(c));
  }
  std::string type_name() const override { return "BasicBlock"; }
  Tensor forward(const Tensor& x) {
    Tensor out = ag::relu(bn1->forward(conv1->forward(x)));
    return ag::relu(bn2->forward(conv2->forward(out)) + x);
  }
  std::shared_ptr<nn::Conv2dImpl> conv1, conv2;
  std::shared_ptr<nn::BatchNorm2dImpl> bn1, bn2;
};

std::shared_ptr<nn::SequentialImpl> make_resnet_block() {
  // Pushed with their own types: a vector of nn::Module pointers would hide BasicBlock's forward.
  return std::make_shared<nn::SequentialImpl>(std::make_shared<BasicBlock>(4),
                                              std::make_shared<nn::MaxPool2dImpl>(ag::IntList{2}));
}

std::shared_ptr<nn::SequentialImpl> make_transformer() {
  return std::make_shared<nn::SequentialImpl>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::TransformerBlock>(16, 4, 8, 32),
      std::make_shared<nn::TransformerBlock>(16, 4, 8, 32),
      std::make_shared<nn::LayerNormImpl>(ag::IntList{16})});
}

}  // namespace

TEST(AotModule, MlpMatchesEager) {
  auto compiled = expect_aot_module_matches_eager<nn::SequentialImpl>(make_mlp, ag::randn({8, 6}));
  ag::CompiledGraphs g = compiled.graphs();
  EXPECT_FALSE(g.is_inference);
  EXPECT_NE(g.forward.find("aten.gelu"), std::string::npos) << g.forward;
}

TEST(AotModule, InputGradientAndF64Model) {
  expect_aot_module_matches_eager<nn::SequentialImpl>(
      [] {
        auto m = make_mlp();
        m->to(DType::f64);
        return m;
      },
      ag::randn({5, 6}, DType::f64).requires_grad_(), {1e-12, 1e-10});
}

TEST(AotModule, OptimizerStepsBetweenCallsNeedNoRecompile) {
  ag::manual_seed(3);
  auto eager = make_mlp();
  ag::manual_seed(3);
  auto model = make_mlp();
  auto compiled = ag::aot_module(model);
  ag::optim::AdamW opt_eager(eager->parameters(), ag::optim::AdamWOptions(0.01));
  ag::optim::AdamW opt_compiled(model->parameters(), ag::optim::AdamWOptions(0.01));
  Tensor x = ag::randn({4, 6}), target = ag::randn({4, 3});
  for (int step = 0; step < 3; ++step) {
    opt_eager.zero_grad();
    opt_compiled.zero_grad();
    Tensor le = ag::mse_loss(eager->forward(x), target);
    Tensor lc = ag::mse_loss(compiled(x), target);
    EXPECT_TRUE(allclose(lc, le, 1e-6, 1e-5)) << "step " << step << ": " << lc << " vs " << le;
    le.backward();
    lc.backward();
    opt_eager.step();
    opt_compiled.step();
  }
  auto pe = eager->parameters(), pc = model->parameters();
  for (size_t i = 0; i < pe.size(); ++i) EXPECT_TRUE(allclose(pc[i], pe[i], 1e-5, 1e-4)) << i;
  EXPECT_EQ(compiled.num_compilations(), 1u);
}

TEST(AotModule, TrainEvalAndNoGradAreSeparateSpecializations) {
  ag::manual_seed(4);
  auto model = make_mlp();
  auto compiled = ag::aot_module(model);
  Tensor x = ag::randn({2, 6});
  Tensor y_train = compiled(x);
  model->eval();
  Tensor y_eval = compiled(x);
  EXPECT_EQ(compiled.num_compilations(), 2u);
  {
    ag::NoGradGuard no_grad;
    Tensor y = compiled(x);
    EXPECT_FALSE(y.requires_grad());
    EXPECT_TRUE(compiled.graphs().is_inference);
    EXPECT_TRUE(allclose(y, y_train, 1e-6, 1e-6));
  }
  EXPECT_EQ(compiled.num_compilations(), 3u);
  model->train();
  compiled(x);
  EXPECT_EQ(compiled.num_compilations(), 3u);
  EXPECT_TRUE(allclose(y_eval, y_train, 1e-6, 1e-6));
}

TEST(AotModule, ParametersComeFirstInTheGraph) {
  ag::manual_seed(5);
  auto lin = std::make_shared<nn::LinearImpl>(3, 2);
  auto compiled = ag::aot_module(lin);
  Tensor y = compiled(ag::randn({4, 3}));
  std::string fw = compiled.graphs().forward;
  // weight [2,3], bias [2], then the user input [4,3].
  EXPECT_NE(fw.find("%primals_1: f32[2,3]"), std::string::npos) << fw;
  EXPECT_NE(fw.find("%primals_2: f32[2]"), std::string::npos) << fw;
  EXPECT_NE(fw.find("%primals_3: f32[4,3]"), std::string::npos) << fw;
  EXPECT_EQ(y.sizes(), (ag::IntList{4, 2}));
}

TEST(AotModule, TransformerBlocksMatchEager) {
  auto compiled =
      expect_aot_module_matches_eager<nn::SequentialImpl>(make_transformer, ag::randn({2, 8, 16}));
  ag::CompiledGraphs g = compiled.graphs();
  // The attention: the composite, or under cpp one fused node (AotConfig::fuse_attention).
  EXPECT_TRUE(g.forward.find("aten.masked_fill") != std::string::npos ||
              g.forward.find("aotgrad.masked_attention") != std::string::npos)
      << g.forward;
  EXPECT_NE(g.forward.find("aten.native_layer_norm"), std::string::npos) << g.forward;
  // The causal masks are buffers, lifted to graph inputs after the parameters.
  EXPECT_NE(g.forward.find("b8[8,8]"), std::string::npos) << g.forward;
}

TEST(AotModule, TransformerF64InputGradient) {
  expect_aot_module_matches_eager<nn::SequentialImpl>(
      [] {
        auto m = make_transformer();
        m->to(DType::f64);
        return m;
      },
      ag::randn({2, 5, 16}, DType::f64).requires_grad_(), {1e-11, 1e-9});
}

TEST(AotModule, ResNetBasicBlockUpdatesRunningStats) {
  // Two calls: the running statistics and num_batches_tracked must move in the caller's buffers
  // exactly as eager moves them.
  auto compiled = expect_aot_module_matches_eager<nn::SequentialImpl>(
      make_resnet_block, ag::randn({3, 4, 6, 6}), {}, 3);
  auto buffers = compiled.module().named_buffers();
  ASSERT_EQ(buffers.size(), 6u);
  EXPECT_EQ(buffers[0].first, "0.bn1.running_mean");
  EXPECT_EQ(buffers[2].first, "0.bn1.num_batches_tracked");
  EXPECT_EQ(buffers[2].second.item<int64_t>(), 3);
}

TEST(AotModule, ResNetBasicBlockEvalMode) {
  expect_aot_module_matches_eager<nn::SequentialImpl>(
      [] {
        auto m = make_resnet_block();
        // Non-trivial running statistics, then eval: normalisation uses them and leaves them alone.
        m->forward(ag::randn({2, 4, 6, 6}) * 2.0 + 0.5);
        m->eval();
        return m;
      },
      ag::randn({3, 4, 6, 6}).requires_grad_());
}

TEST(AotModule, DropoutDrawsTheSameMasksAsEagerFromTheSameSeed) {
  auto make = [] { return std::make_shared<nn::TransformerBlock>(16, 4, 8, 32, /*dropout=*/0.3); };
  ag::manual_seed(8);
  auto eager = make();
  ag::manual_seed(8);
  auto model = make();
  auto compiled = ag::aot_module(model);
  Tensor x = ag::randn({2, 8, 16});
  for (int call = 0; call < 2; ++call) {
    ag::manual_seed(100 + call);
    Tensor ye = eager->forward(x);
    ag::manual_seed(100 + call);
    Tensor yc = compiled(x);
    EXPECT_TRUE(allclose(yc, ye, 1e-5, 1e-4)) << "call " << call;
    ye.sum().backward();
    yc.sum().backward();
    auto pe = eager->named_parameters(), pc = model->named_parameters();
    for (size_t i = 0; i < pe.size(); ++i)
      EXPECT_TRUE(allclose(pc[i].second.grad(), pe[i].second.grad(), 1e-5, 1e-4)) << pe[i].first;
  }
}

TEST(AotModule, FailedTraceLeavesTheModuleIntact) {
  ag::manual_seed(6);
  auto model = make_mlp();
  auto compiled = ag::aot_module(model);
  EXPECT_THROW(compiled(ag::randn({2, 5})), std::invalid_argument);  // wrong feature size
  for (const auto& [name, p] : model->named_parameters()) {
    EXPECT_FALSE(p.is_fake()) << name;
    EXPECT_TRUE(p.is_leaf() && p.requires_grad()) << name;
  }
  EXPECT_EQ(model->forward(ag::randn({2, 6})).sizes(), (ag::IntList{2, 3}));
  EXPECT_EQ(compiled(ag::randn({2, 6})).sizes(), (ag::IntList{2, 3}));
}
