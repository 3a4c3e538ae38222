// aot_module through the artifact: parameters and buffers carry their fully-qualified names as
// descriptors (param(layer1.weight), not input(3)) in the graphs, the API and the artifact; a
// buffer the forward reassigns (`steps = steps + 1`) is written back as a buffer mutation, as
// PyTorch does, and a reassigned parameter is refused by name.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Descriptor;
using ag::DescriptorKind;
using ag::Tensor;

namespace {

class Counting : public nn::Module {
 public:
  explicit Counting(bool reassign_weight = false) : reassign_weight_(reassign_weight) {
    layer1 = register_module("layer1", std::make_shared<nn::LinearImpl>(3, 2));
    steps = ag::zeros({2}, ag::DType::f32);
    register_buffer("steps", steps);
  }
  std::string type_name() const override { return "Counting"; }
  Tensor forward(const Tensor& x) {
    Tensor y = layer1->forward(x) + steps;
    steps = steps + 1.0;  // reassigned, not mutated in place
    if (reassign_weight_) layer1->weight = layer1->weight * 2.0;
    return y;
  }
  std::shared_ptr<nn::LinearImpl> layer1;
  Tensor steps;

 private:
  bool reassign_weight_;
};

Tensor input() {
  return ag::testing::test_input({4, 3}, -1.0, 1.0, 7, false).to(ag::DType::f32);
}

}  // namespace

TEST(ModuleArtifact, ParametersAndBuffersAreDescribedByName) {
  auto model = std::make_shared<Counting>();
  auto compiled = ag::aot_module(model);
  compiled(input()).sum().backward();
  ag::CompiledGraphs g = compiled.graphs();
  const std::vector<Descriptor>& in = g.forward_descriptors.inputs;
  ASSERT_EQ(in.size(), 4u) << g.forward;
  EXPECT_EQ(in[0], Descriptor::param("layer1.weight"));
  EXPECT_EQ(in[1], Descriptor::param("layer1.bias"));
  EXPECT_EQ(in[2], Descriptor::buffer("steps"));
  EXPECT_EQ(in[3], Descriptor::input(0));
  EXPECT_NE(g.forward.find("# param(layer1.weight)"), std::string::npos) << g.forward;
  EXPECT_NE(g.forward.find("# buffer(steps)"), std::string::npos) << g.forward;
  EXPECT_NE(g.forward.find("# mutated_input(buffer(steps))"), std::string::npos) << g.forward;
  std::vector<std::string> grads;
  for (const Descriptor& d : g.backward_descriptors.outputs) grads.push_back(d.to_string());
  EXPECT_EQ(grads,
            (std::vector<std::string>{"grad(param(layer1.weight))", "grad(param(layer1.bias))"}));
  // The artifact carries them through serialization.
  ag::Artifact back = ag::deserialize_artifact(ag::serialize_artifact(compiled.artifact()));
  EXPECT_TRUE(back.graphs().forward_descriptors == g.forward_descriptors);
}

TEST(ModuleArtifact, AReassignedBufferIsWrittenBackLikeEager) {
  ag::manual_seed(42);
  auto eager = std::make_shared<Counting>();
  ag::manual_seed(42);
  auto model = std::make_shared<Counting>();
  Tensor original = model->steps;
  auto compiled = ag::aot_module(model);
  for (int call = 0; call < 3; ++call) {
    Tensor want = eager->forward(input());
    Tensor got = compiled(input());
    EXPECT_TRUE(ag::testing::allclose(got, want, 0.0, 0.0)) << "call " << call;
  }
  EXPECT_TRUE(model->steps.is_same(original)) << "the module's buffer was replaced";
  EXPECT_TRUE(ag::testing::allclose(model->steps, eager->steps, 0.0, 0.0)) << model->steps;
  EXPECT_TRUE(ag::testing::allclose(model->steps, ag::full({2}, 3.0, ag::DType::f32), 0.0, 0.0));
  EXPECT_EQ(compiled.num_compilations(), 1u);
}

TEST(ModuleArtifact, AReassignedParameterIsRefusedByName) {
  auto compiled = ag::aot_module(std::make_shared<Counting>(/*reassign_weight=*/true));
  try {
    compiled(input());
    ADD_FAILURE() << "a reassigned parameter was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("parameter 'layer1.weight'"), std::string::npos)
        << e.what();
  }
}
