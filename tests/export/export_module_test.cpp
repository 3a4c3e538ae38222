// aot_export_module: the signature of a Linear + BatchNorm module (parameters, buffers, the
// running statistics as buffers_to_mutate, the backward signature of a joint export), and the
// exported graphs loaded back with GraphProgram against eager autograd on an identical module.
#include <gtest/gtest.h>

#include <map>

#include "aotgrad/export.h"
#include "aotgrad/graph_program.h"
#include "export/export_net.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::testing::allclose;
using ag::testing::ExportNet;

namespace {

const std::vector<std::string> kParams = {"fc.weight", "fc.bias", "bn.weight", "bn.bias"};
const std::vector<std::string> kBuffers = {"bn.running_mean", "bn.running_var",
                                           "bn.num_batches_tracked"};

std::vector<std::string> values_of(const ag::NameMap& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(v);
  return out;
}

std::vector<std::string> keys_of(const ag::NameMap& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

// The eager reference: one training step's loss, parameter gradients and buffers afterwards.
struct Eager {
  ag::Tensor loss;
  std::map<std::string, ag::Tensor> grads, buffers;
};

Eager run_eager() {
  auto net = ag::testing::make_export_net();
  Eager e;
  e.loss = net->forward(ag::testing::export_net_input());
  e.loss.backward();
  for (const auto& [name, p] : net->named_parameters()) e.grads[name] = p.grad();
  for (const auto& [name, b] : net->named_buffers()) e.buffers[name] = b.clone();
  return e;
}

// The exported graph's inputs for a fresh net: detached copies of (params, buffers), then x.
std::vector<ag::Tensor> graph_inputs() {
  std::vector<ag::Tensor> in;
  for (const ag::Tensor& t : ag::testing::params_and_buffers(*ag::testing::make_export_net()))
    in.push_back(t.detach().clone());
  in.push_back(ag::testing::export_net_input());
  return in;
}

// Each output of an exported graph against the eager value its descriptor names.
void expect_outputs_match(const ag::GraphDescriptors& d, const std::vector<ag::Tensor>& out,
                          const Eager& e, bool with_grads) {
  ASSERT_EQ(out.size(), d.outputs.size());
  size_t seen_grads = 0, seen_buffers = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    const ag::Descriptor& desc = d.outputs[o];
    SCOPED_TRACE(desc.to_string());
    if (desc.kind == ag::DescriptorKind::output) {
      EXPECT_TRUE(allclose(out[o], e.loss, 1e-5, 1e-5));
    } else if (desc.kind == ag::DescriptorKind::mutated_input) {
      EXPECT_TRUE(allclose(out[o], e.buffers.at(desc.of.at(0).name), 1e-6, 1e-5));
      ++seen_buffers;
    } else {
      ASSERT_EQ(desc.kind, ag::DescriptorKind::grad);
      EXPECT_TRUE(allclose(out[o], e.grads.at(desc.of.at(0).name), 1e-5, 1e-4));
      ++seen_grads;
    }
  }
  EXPECT_EQ(seen_buffers, 3u);
  EXPECT_EQ(seen_grads, with_grads ? 4u : 0u);
}

}  // namespace

TEST(ExportModule, ForwardSignatureListsParametersBuffersAndBufferMutations) {
  auto net = ag::testing::make_export_net();
  ag::ExportedGraph e = ag::aot_export_module(net, std::tuple{ag::testing::export_net_input()});
  const ag::GraphSignature& s = e.signature;
  EXPECT_EQ(s.parameters, kParams);
  EXPECT_EQ(s.buffers, kBuffers);
  EXPECT_EQ(values_of(s.inputs_to_parameters), kParams);
  EXPECT_EQ(values_of(s.inputs_to_buffers), kBuffers);
  EXPECT_EQ(values_of(s.buffers_to_mutate), kBuffers);
  EXPECT_TRUE(s.user_inputs_to_mutate.empty());
  ASSERT_EQ(s.user_inputs.size(), 1u);
  ASSERT_EQ(s.user_outputs.size(), 1u);
  EXPECT_FALSE(s.backward_signature.has_value());
  // Inputs are (params, buffers, user inputs); outputs (mutated buffers, user outputs).
  ASSERT_EQ(e.descriptors.inputs.size(), 8u);
  EXPECT_EQ(e.descriptors.inputs[0].to_string(), "param(fc.weight)");
  EXPECT_EQ(e.descriptors.inputs[4].to_string(), "buffer(bn.running_mean)");
  EXPECT_EQ(e.descriptors.inputs[7].to_string(), "input(0)");
  ASSERT_EQ(e.descriptors.outputs.size(), 4u);
  EXPECT_EQ(e.descriptors.outputs[0].to_string(), "mutated_input(buffer(bn.running_mean))");
  EXPECT_EQ(e.descriptors.outputs[3].to_string(), "output(0)");
  // The names are the graph's: the signature read back from the text is the same.
  EXPECT_EQ(ag::signature_of_graph(e.graph), s);
  for (const std::string& name : keys_of(s.inputs_to_parameters))
    EXPECT_NE(e.graph.find("%" + name + ":"), std::string::npos) << name;
  EXPECT_TRUE(e.forward.empty());
  // Exporting reads the module and leaves it as it was.
  EXPECT_EQ(net->bn->num_batches_tracked.item<int64_t>(), 0);
}

TEST(ExportModule, JointSignatureHasGradientsAndTheLoss) {
  auto net = ag::testing::make_export_net();
  ag::ExportedGraph e = ag::aot_export_module(net, std::tuple{ag::testing::export_net_input()},
                                              {.trace_joint = true, .output_loss_index = 0});
  const ag::GraphSignature& s = e.signature;
  EXPECT_EQ(s.parameters, kParams);
  EXPECT_EQ(values_of(s.buffers_to_mutate), kBuffers);
  ASSERT_TRUE(s.backward_signature.has_value());
  const ag::BackwardSignature& bw = *s.backward_signature;
  EXPECT_EQ(values_of(bw.gradients_to_parameters), kParams);
  EXPECT_TRUE(bw.gradients_to_user_inputs.empty());  // x does not require grad
  ASSERT_EQ(s.user_outputs.size(), 1u);
  EXPECT_EQ(bw.loss_output, s.user_outputs[0]);
  // No tangent input: the loss is seeded with ones inside the graph.
  EXPECT_EQ(e.descriptors.inputs.size(), 8u);
  EXPECT_EQ(e.graph.find("tangent("), std::string::npos) << e.graph;
  EXPECT_NE(e.graph.find("aten.full.default"), std::string::npos);
  EXPECT_EQ(ag::signature_of_graph(e.graph, 3), s);
  // The partitioned pair comes along.
  EXPECT_NE(e.forward.find("graph forward("), std::string::npos);
  EXPECT_NE(e.backward.find("tangent(output(0))"), std::string::npos) << e.backward;
}

TEST(ExportModule, JointGraphLoadedBackMatchesEagerTrainingStep) {
  auto net = ag::testing::make_export_net();
  ag::ExportedGraph e = ag::aot_export_module(net, std::tuple{ag::testing::export_net_input()},
                                              {.trace_joint = true, .output_loss_index = 0});
  ag::GraphProgram prog = ag::GraphProgram::parse(e.graph, "<exported joint>");
  ag::GraphRunResult r = prog.run(graph_inputs());
  expect_outputs_match(e.descriptors, r.outputs, run_eager(), true);
}

TEST(ExportModule, ForwardGraphLoadedBackMatchesEagerValuesAndGrads) {
  auto net = ag::testing::make_export_net();
  ag::ExportedGraph e = ag::aot_export_module(net, std::tuple{ag::testing::export_net_input()});
  ag::GraphProgram prog = ag::GraphProgram::parse(e.graph, "<exported forward>");
  // Differentiate the loss alone: the buffers and x get no gradient, the new running statistics
  // (outputs 0-2) a zero tangent.
  ag::GraphRunOptions options{.backward = true, .no_grad = {4, 5, 6, 7}};
  std::vector<ag::Tensor> tangents;
  for (size_t o = 0; o < 3; ++o)
    tangents.push_back(ag::zeros_like(run_eager().buffers.at(kBuffers[o])));
  tangents.push_back(ag::ones({}));
  ag::GraphRunResult r = prog.run(graph_inputs(), options, tangents);
  Eager eager = run_eager();
  expect_outputs_match(e.descriptors, r.outputs, eager, false);
  for (size_t p = 0; p < kParams.size(); ++p)
    EXPECT_TRUE(allclose(r.grads.at(p), eager.grads.at(kParams[p]), 1e-5, 1e-4)) << kParams[p];
}

// A module that writes into its (non-differentiable) input: user_inputs_to_mutate.
class Accumulate : public ag::nn::Module {
 public:
  Accumulate() {
    w = ag::ones({3}).requires_grad_();
    register_parameter("w", w);
  }
  ag::Tensor forward(const ag::Tensor& acc) {
    ag::Tensor written = acc;
    written.add_(w.detach());
    return (written * w).sum();
  }
  ag::Tensor w;
};

TEST(ExportModule, MutatedUserInputIsInUserInputsToMutate) {
  auto m = std::make_shared<Accumulate>();
  ag::Tensor acc = ag::zeros({3});
  ag::ExportedGraph e =
      ag::aot_export_module(m, std::tuple{acc}, {.trace_joint = true, .output_loss_index = 0});
  const ag::GraphSignature& s = e.signature;
  ASSERT_EQ(s.user_inputs.size(), 1u);
  ASSERT_EQ(s.user_inputs_to_mutate.size(), 1u);
  EXPECT_EQ(s.user_inputs_to_mutate[0].second, s.user_inputs[0]);
  EXPECT_EQ(values_of(s.backward_signature->gradients_to_parameters),
            std::vector<std::string>{"w"});
  EXPECT_EQ(ag::testing::values(acc), (std::vector<float>{0, 0, 0}));  // not run, only traced
}
