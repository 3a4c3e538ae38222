// A dropout transformer block (src/nn/transformer.cpp) compiled with functionalized RNG: under
// min_cut it saves no dropout mask (the backward draws them again) and fewer bytes than the
// default partitioner, which saves the masks; and it trains compiled with the same loss curve as
// eager from the same seed.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn/aot_module.h"
#include "aotgrad/nn/layers.h"
#include "aotgrad/nn/optim.h"
#include "testing/gradcheck.h"

namespace aotgrad {
namespace {

using testing::test_input;

std::shared_ptr<nn::TransformerBlock> make_block() {
  manual_seed(1234);  // the same initial weights every time
  return std::make_shared<nn::TransformerBlock>(16, 2, 8, 32, 0.2);
}

CompiledGraphs graphs_after_one_step(const std::string& partitioner) {
  AotConfig config;
  config.partitioner = partitioner;
  auto compiled = aot_module(make_block(), config);
  Tensor x = test_input({2, 8, 16}, -1, 1, 3, false).to(DType::f32);
  sum(compiled(x)).backward();
  return compiled.graphs();
}

TEST(RandomTransformer, MinCutRecomputesTheMasksAndSavesFewerBytes) {
  const CompiledGraphs def = graphs_after_one_step("default");
  const CompiledGraphs cut = graphs_after_one_step("min_cut");
  // (The b8[8, 8] graph input is the causal mask buffer, not a dropout mask.)
  EXPECT_NE(def.saved_report.find("from aotgrad.philox_dropout_mask"), std::string::npos)
      << def.saved_report;
  EXPECT_EQ(cut.saved_report.find("from aotgrad.philox_dropout_mask"), std::string::npos)
      << cut.saved_report;
  EXPECT_NE(cut.backward.find("aotgrad.philox_dropout_mask.default"), std::string::npos)
      << cut.backward;
  EXPECT_LT(cut.saved_bytes, def.saved_bytes);
  RecordProperty("default_saved_activation_bytes", std::to_string(def.saved_activation_bytes));
  RecordProperty("min_cut_saved_activation_bytes", std::to_string(cut.saved_activation_bytes));
}

// Losses of `steps` SGD steps on a fixed batch, drawing dropout masks from seed 42.
template <typename Forward>
std::vector<float> losses(nn::TransformerBlock& block, Forward&& forward, int steps) {
  optim::SGD opt(block.parameters(), 0.05);
  Tensor x = test_input({2, 8, 16}, -1, 1, 5, false).to(DType::f32);
  Tensor target = test_input({2, 8, 16}, -1, 1, 6, false).to(DType::f32);
  manual_seed(42);
  std::vector<float> out;
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    Tensor diff = sub(forward(x), target);
    Tensor loss = mean(mul(diff, diff));
    loss.backward();
    opt.step();
    out.push_back(loss.item<float>());
  }
  return out;
}

TEST(RandomTransformer, TrainsCompiledWithEagersLossCurve) {
  auto eager_block = make_block();
  std::vector<float> eager = losses(
      *eager_block, [&](const Tensor& x) { return eager_block->forward(x); }, 4);
  for (const char* partitioner : {"default", "min_cut"}) {
    AotConfig config;
    config.partitioner = partitioner;
    auto block = make_block();
    auto compiled = aot_module(block, config);
    std::vector<float> comp = losses(
        *block, [&](const Tensor& x) { return compiled(x); }, 4);
    ASSERT_EQ(comp.size(), eager.size());
    for (size_t s = 0; s < eager.size(); ++s)
      EXPECT_NEAR(comp[s], eager[s], 1e-5 * std::abs(eager[s])) << partitioner << ", step " << s;
    EXPECT_EQ(compiled.num_compilations(), 1u);
  }
  EXPECT_GT(eager.front(), eager.back()) << "it learns";
}

}  // namespace
}  // namespace aotgrad
