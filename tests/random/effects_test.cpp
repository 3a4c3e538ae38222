// Effect tokens (include/aotgrad/effects.h): an effectful op (aotgrad.print) in a compiled
// function runs once per call, in program order, is never dropped by DCE (its result is unused),
// merged by CSE (two identical prints), reordered or recomputed by either partitioner (even at
// budget 0), and the graphs show the token input and output fw_token(0).
#include "aotgrad/effects.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "ops/effects.h"
#include "testing/compare.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::test_input;

size_t count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t p = text.find(part); p != std::string::npos; p = text.find(part, p + 1)) ++n;
  return n;
}

std::vector<Tensor> chatty(const Tensor& x) {
  print(x, "x = {}");
  Tensor y = mul(tanh(x), 2.0);
  print(y, "y = {}");
  print(x, "x = {}");            // the same call again: not merged with the first
  print(exp(x), "unused = {}");  // nothing reads it: not removed
  return {sum(y)};
}

TEST(EffectTokens, EagerPrintWritesToTheSink) {
  take_printed();
  print(from_vector(std::vector<float>{1.0f, 2.5f}, {2}), "v: {} end");
  EXPECT_EQ(take_printed(), std::vector<std::string>{"v: [1, 2.5] end"});
  EXPECT_TRUE(take_printed().empty());
}

TEST(EffectTokens, CompiledPrintsRunOnceInOrderUnderBothPartitioners) {
  Tensor x = test_input({3}, -1, 1, 2);
  take_printed();
  chatty(x)[0].backward();
  const std::vector<std::string> eager = take_printed();
  ASSERT_EQ(eager.size(), 4u);
  for (auto [partitioner, budget] :
       {std::pair<const char*, double>{"default", 1.0}, {"min_cut", 1.0}, {"min_cut", 0.0}}) {
    AotConfig config;
    config.partitioner = partitioner;
    config.activation_memory_budget = budget;
    auto compiled = aot_function(chatty, config);
    for (int call = 0; call < 2; ++call) {
      Tensor out = compiled(x)[0];
      EXPECT_EQ(take_printed(), eager) << partitioner << " " << budget << ", call " << call;
      out.backward();
      EXPECT_TRUE(take_printed().empty()) << "the backward prints nothing";
    }
    const CompiledGraphs g = compiled.graphs();
    EXPECT_EQ(count(g.forward, "aotgrad.with_effects.default"), 4u) << g.forward;
    EXPECT_EQ(count(g.backward, "with_effects"), 0u) << g.backward;
    EXPECT_EQ(g.forward_descriptors.inputs.back().kind, DescriptorKind::fw_token);
    bool token_out = false;
    for (const Descriptor& d : g.forward_descriptors.outputs)
      token_out = token_out || d.kind == DescriptorKind::fw_token;
    EXPECT_TRUE(token_out) << g.forward;
    EXPECT_NE(g.forward.find("fw_token(0)"), std::string::npos) << g.forward;
    testing::compare_detail::expect_graph_text_round_trips(g.forward, "forward");
  }
}

TEST(EffectTokens, TokensChainTheEffectsInProgramOrder) {
  auto compiled = aot_function(chatty);
  Tensor x = test_input({3}, -1, 1, 2, false);
  compiled(x);
  take_printed();
  const std::string fw = compiled.graphs().inference;
  // Each with_effects node reads the token the previous one returned: the first reads the
  // input, and the order of the nodes is the order of the prints.
  size_t a = fw.find("x = {}"), b = fw.find("y = {}"), c = fw.find("unused = {}");
  ASSERT_NE(a, std::string::npos) << fw;
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(count(fw, "aotgrad.with_effects.default"), 4u) << fw;
}

TEST(EffectTokens, ArtifactRoundTripRunsTheEffects) {
  auto fn = [](const Tensor& x) {
    print(x, "{}");
    return add(x, 1.0);
  };
  auto compiled = aot_function(fn);
  Tensor x = from_vector(std::vector<float>{4.0f}, {1});
  compiled(x);
  take_printed();
  CompiledArtifact run = instantiate(deserialize_artifact(serialize_artifact(compiled.artifact())));
  std::vector<Tensor> out = run({x});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].item<float>(), 5.0f);
  EXPECT_EQ(take_printed(), std::vector<std::string>{"[4]"});
}

TEST(EffectTokens, FormatsWithSeparatorsAndQuotesSurviveTheGraph) {
  const std::string fmt = "a;b \"q\" s:3:x; {} \\ end";
  auto fn = [&](const Tensor& x) {
    print(x, fmt);
    return mul(x, 3.0);
  };
  Tensor x = from_vector(std::vector<float>{1.0f, -2.0f}, {2});
  take_printed();
  fn(x);
  const std::vector<std::string> eager = take_printed();
  auto compiled = aot_function(fn);
  compiled(x);
  EXPECT_EQ(take_printed(), eager);
  testing::compare_detail::expect_graph_text_round_trips(compiled.graphs().inference, "inference");
}

TEST(EffectTokens, OnlyRowsFlaggedEffectfulAreThreaded) {
  EXPECT_TRUE(ops::is_effectful(ops::lookup("aotgrad.print.default")));
  // native_batch_norm is Recompute::effectful for its hidden update, not a threaded effect.
  EXPECT_FALSE(ops::is_effectful(ops::lookup("aten.native_batch_norm.default")));
  EXPECT_FALSE(ops::is_effectful(ops::lookup("aten.add.Tensor")));
  EXPECT_FALSE(ops::is_effectful(ops::lookup("aten.relu_.default")));
}

}  // namespace
}  // namespace aotgrad

namespace aotgrad {
namespace {

// Export of a function that draws and prints: the graph shows the RNG and token inputs and the
// token output; the signature lists only the user's input and output (the runtime feeds the
// rest, as PyTorch's input_tokens are not user inputs).
TEST(EffectTokens, ExportShowsStateInputsAndKeepsThemOutOfTheSignature) {
  auto fn = [](const std::vector<Tensor>& in) {
    print(in[0], "{}");
    return std::vector<Tensor>{dropout(in[0], 0.5)};
  };
  ExportedGraph e = aot_export_joint_simple(fn, {ones({4})}, /*trace_joint=*/false);
  take_printed();
  EXPECT_NE(e.graph.find("fw_rng_seed()"), std::string::npos) << e.graph;
  EXPECT_NE(e.graph.find("fw_rng_offset(1)"), std::string::npos) << e.graph;
  EXPECT_NE(e.graph.find("fw_token(0)"), std::string::npos) << e.graph;
  EXPECT_EQ(e.signature.user_inputs.size(), 1u);
  EXPECT_EQ(e.signature.user_outputs.size(), 1u);
}

}  // namespace
}  // namespace aotgrad
