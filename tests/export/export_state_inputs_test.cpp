// Inputs the runtime feeds rather than the caller, in export signatures: the generator state a
// dropout module draws from (rng_inputs: fw_rng_seed() and fw_rng_offset(N)) and the effect token
// of a function that prints (input_tokens / output_tokens), each named by its graph value, and
// carried through the signature's JSON.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/effects.h"
#include "aotgrad/export.h"
#include "aotgrad/nn.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::testing::contains;

namespace {

class DropoutNet : public ag::nn::Module {
 public:
  DropoutNet() {
    fc = register_module("fc", std::make_shared<ag::nn::LinearImpl>(4, 3));
    drop = register_module("drop", std::make_shared<ag::nn::DropoutImpl>(0.5));
  }
  std::string type_name() const override { return "DropoutNet"; }
  ag::Tensor forward(const ag::Tensor& x) { return drop->forward(fc->forward(x)).sum(); }
  std::shared_ptr<ag::nn::LinearImpl> fc;
  std::shared_ptr<ag::nn::DropoutImpl> drop;
};

}  // namespace

TEST(ExportStateInputs, DropoutListsTheGeneratorSeedAndOffset) {
  ag::manual_seed(3);
  auto net = std::make_shared<DropoutNet>();
  for (bool joint : {false, true}) {
    ag::ExportOptions o{.trace_joint = joint, .output_loss_index = 0};
    ag::ExportedGraph e = ag::aot_export_module(net, std::tuple{ag::randn({5, 4})}, o);
    const ag::GraphSignature& s = e.signature;
    ASSERT_EQ(s.rng_inputs.size(), 2u) << e.graph;
    EXPECT_EQ(s.rng_inputs[0].second, "fw_rng_seed()");
    EXPECT_TRUE(s.rng_inputs[1].second.rfind("fw_rng_offset(", 0) == 0) << s.rng_inputs[1].second;
    // Each is named by a graph input that the graph text describes the same way.
    for (const auto& [name, desc] : s.rng_inputs)
      EXPECT_TRUE(contains(e.graph, "%" + name)) << name << "\n" << e.graph;
    EXPECT_EQ(s.user_inputs.size(), 1u);  // x only: the state is not the caller's
    EXPECT_TRUE(s.input_tokens.empty());
    EXPECT_EQ(ag::signature_from_json(s.to_json()), s) << s.to_json();
    EXPECT_TRUE(contains(s.to_json(), "\"rng_inputs\": {\"")) << s.to_json();
  }
}

TEST(ExportStateInputs, PrintListsTheEffectTokenInAndOut) {
  auto fn = [](const std::vector<ag::Tensor>& in) {
    ag::print(in[0], "x = {}");
    return std::vector<ag::Tensor>{ag::exp(in[0])};
  };
  ag::ExportedGraph e = ag::aot_export_joint_simple(fn, {ag::ones({3})}, false);
  ag::take_printed();
  const ag::GraphSignature& s = e.signature;
  ASSERT_EQ(s.input_tokens.size(), 1u) << e.graph;
  ASSERT_EQ(s.output_tokens.size(), 1u) << e.graph;
  EXPECT_TRUE(contains(e.graph, "%" + s.input_tokens[0])) << e.graph;
  EXPECT_TRUE(contains(e.graph, "%" + s.output_tokens[0])) << e.graph;
  EXPECT_EQ(s.user_inputs.size(), 1u);
  EXPECT_EQ(s.user_outputs.size(), 1u);
  EXPECT_TRUE(s.rng_inputs.empty());
  std::string json = s.to_json();
  EXPECT_TRUE(contains(json, "\"input_tokens\": [\"" + s.input_tokens[0] + "\"]")) << json;
  EXPECT_EQ(ag::signature_from_json(json), s);
}
