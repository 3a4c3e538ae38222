// aot_export_joint_with_descriptors + aot_compile_joint_with_descriptors, and
// aot_module_simplified: each compiled callable against aot_module on an identical module —
// the loss, every parameter gradient and the buffers after the step.
#include <gtest/gtest.h>

#include "aot/artifact.h"
#include "aotgrad/export.h"
#include "export/export_net.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::testing::allclose;

namespace {

// The loss, gradients and buffers of one step of `net`, whose forward ran as `loss`.
struct Step {
  ag::Tensor loss;
  std::vector<ag::Tensor> grads, buffers;
};

Step finish(const ag::nn::Module& net, const ag::Tensor& loss) {
  Step s{loss, {}, {}};
  loss.backward();
  for (const ag::Tensor& p : net.parameters()) s.grads.push_back(p.grad());
  for (const ag::Tensor& b : net.buffers()) s.buffers.push_back(b.clone());
  return s;
}

Step aot_module_step() {
  auto net = ag::testing::make_export_net();
  auto compiled = ag::aot_module(net);
  return finish(*net, compiled(ag::testing::export_net_input()));
}

void expect_same_step(const Step& a, const Step& b) {
  EXPECT_TRUE(allclose(a.loss, b.loss, 1e-5, 1e-5));
  ASSERT_EQ(a.grads.size(), b.grads.size());
  for (size_t i = 0; i < a.grads.size(); ++i)
    EXPECT_TRUE(allclose(a.grads[i], b.grads[i], 1e-5, 1e-4)) << "grad " << i;
  ASSERT_EQ(a.buffers.size(), b.buffers.size());
  for (size_t i = 0; i < a.buffers.size(); ++i)
    EXPECT_TRUE(allclose(a.buffers[i], b.buffers[i], 1e-6, 1e-5)) << "buffer " << i;
}

}  // namespace

TEST(ExportCompile, JointWithDescriptorsHasTypedInputsAndOutputs) {
  auto net = ag::testing::make_export_net();
  ag::JointWithDescriptors jd =
      ag::aot_export_joint_with_descriptors(net, std::tuple{ag::testing::export_net_input()});
  EXPECT_EQ(jd.parameters(),
            (std::vector<std::string>{"fc.weight", "fc.bias", "bn.weight", "bn.bias"}));
  EXPECT_EQ(jd.buffers().size(), 3u);
  ag::GraphDescriptors d = jd.descriptors();
  ASSERT_EQ(d.inputs.size(), 9u);  // params, buffers, x, the loss's tangent
  EXPECT_EQ(d.inputs[8].to_string(), "tangent(output(0))");
  EXPECT_EQ(d.outputs.back().to_string(), "grad(param(bn.bias))");
  EXPECT_NE(jd.graph().find("# grad(param(fc.weight))"), std::string::npos) << jd.graph();
}

TEST(ExportCompile, CompiledJointMatchesAotModule) {
  for (const char* partitioner : {"default", "min_cut"}) {
    SCOPED_TRACE(partitioner);
    auto net = ag::testing::make_export_net();
    ag::JointWithDescriptors jd =
        ag::aot_export_joint_with_descriptors(net, std::tuple{ag::testing::export_net_input()});
    ag::AotConfig config;
    config.partitioner = partitioner;
    ag::CompiledArtifact run = ag::aot_compile_joint_with_descriptors(jd, config);
    EXPECT_EQ(run.artifact().data().config.partitioner, partitioner);
    std::vector<ag::Tensor> in = ag::testing::params_and_buffers(*net);
    in.push_back(ag::testing::export_net_input());
    expect_same_step(finish(*net, run(in).at(0)), aot_module_step());
  }
}

TEST(ExportCompile, ModuleSimplifiedMatchesAotModule) {
  auto net = ag::testing::make_export_net();
  ag::SimplifiedModule run = ag::aot_module_simplified(net, {ag::testing::export_net_input()});
  EXPECT_EQ(run.artifact().graphs().forward_descriptors.inputs.at(0).to_string(),
            "param(fc.weight)");
  expect_same_step(finish(*net, run({ag::testing::export_net_input()}).at(0)), aot_module_step());
}

TEST(ExportCompile, ModuleSimplifiedRefusesWhatItCannotCall) {
  auto net = ag::testing::make_export_net();
  std::string e = ag::testing::error_of<ag::ExportError>([&] {
    ag::aot_module_simplified(net, {ag::ones({5, 4}), ag::ones({5, 4})});
  });
  EXPECT_TRUE(ag::testing::contains(e, "ExportNet::forward does not take 2 tensors")) << e;
  // A call outside the compiled specialization names the difference.
  ag::SimplifiedModule run = ag::aot_module_simplified(net, {ag::testing::export_net_input()});
  std::string m = ag::testing::error_of<std::invalid_argument>([&] { run({ag::ones({6, 4})}); });
  EXPECT_TRUE(ag::testing::contains(m, "must be f32[5, 4] strides [4, 1] offset 0, got f32[6, 4]"))
      << m;
  m = ag::testing::error_of<std::invalid_argument>([&] { run({}); });
  EXPECT_TRUE(ag::testing::contains(
      m,
      "ExportNet: aot_module_simplified was compiled for 1 user inputs, got 0 (input positions "
      "in errors count the 7 parameters and buffers first)"))
      << m;
}
