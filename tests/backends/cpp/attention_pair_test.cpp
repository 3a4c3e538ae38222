// A recomputed attention and its backward as one cpp step (backends/cpp/attention_pairs.h): the
// schedule pairs them only when that is legal, moves the forward's readers after the pair, and
// the values are the interpreter's; end to end, a memory budget that recomputes the attention
// gives eager's gradients through the pair.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "backends/cpp/attention_pairs.h"
#include "backends/cpp/cpp_test_util.h"
#include "graph/parser.h"
#include "graph/verifier.h"
#include "testing/values.h"

namespace ag = aotgrad;

namespace {

// A backward graph as a budget below 1 makes it: the attention recomputed for its output (read by
// %wg, the weight gradient of the projection after it), then its backward, whose output gradient
// does not depend on that output. T = 128: the kernels take their tiled path.
constexpr const char* kRecomputed =
    R"(graph recomputed(%q: f64[1,2,128,8], %k: f64[1,2,128,8], %v: f64[1,2,128,4], %mask: b8[128,128], %go: f64[1,2,128,4], %w: f64[1,2,128,4]) {
  %a: f64[1,2,128,4] = aotgrad.masked_attention.default(%q, %k, %v, %mask, scale=0.35)
  %t: f64[1,128,2,4]{1024,4,512,1} = aten.transpose.int(%a, dim0=1, dim1=2)
  %c: f64[1,128,2,4] = aten.clone.default(%t)
  %wg: f64[1,128,2,4] = aten.mul.Tensor(%c, %c)
  %g2: f64[1,2,128,4] = aten.mul.Tensor(%go, %w)
  %gq: f64[1,2,128,8], %gk: f64[1,2,128,8], %gv: f64[1,2,128,4] = aotgrad.masked_attention_backward.default(%g2, %q, %k, %v, %mask, scale=0.35, output_mask=[true, true, true])
  %s: f64[1,2,128,8] = aten.add.Tensor(%gq, %gk)
  return (%wg, %s, %gv, %a)
})";

// The output gradient reads the forward's output: no pair (it would need the output first).
constexpr const char* kDependent =
    R"(graph dependent(%q: f64[1,2,128,8], %k: f64[1,2,128,8], %v: f64[1,2,128,4], %mask: b8[128,128]) {
  %a: f64[1,2,128,4] = aotgrad.masked_attention.default(%q, %k, %v, %mask, scale=0.5)
  %g: f64[1,2,128,4] = aten.mul.Tensor(%a, %a)
  %gq: f64[1,2,128,8], %gk: f64[1,2,128,8], %gv: f64[1,2,128,4] = aotgrad.masked_attention_backward.default(%g, %q, %k, %v, %mask, scale=0.5, output_mask=[true, false, true])
  return (%gq, %gk, %gv)
})";

// Another scale, another key, no mask: pairs only where everything matches; two pairs in one graph.
constexpr const char* kMixed =
    R"(graph mixed(%q: f32[2,128,8], %k: f32[2,128,8], %k2: f32[2,128,8], %v: f32[2,128,4], %go: f32[2,128,4]) {
  %a: f32[2,128,4] = aotgrad.masked_attention.default(%q, %k, %v, none, scale=0.5)
  %b: f32[2,128,4] = aotgrad.masked_attention.default(%q, %k2, %v, none, scale=0.5)
  %c: f32[2,128,4] = aotgrad.masked_attention.default(%q, %k, %v, none, scale=0.25)
  %x: f32[2,128,4] = aten.add.Tensor(%a, %b)
  %y: f32[2,128,4] = aten.add.Tensor(%x, %c)
  %gq: f32[0], %gk: f32[2,128,8], %gv: f32[2,128,4] = aotgrad.masked_attention_backward.default(%go, %q, %k, %v, none, scale=0.25, output_mask=[false, true, true])
  %hq: f32[2,128,8], %hk: f32[2,128,8], %hv: f32[0] = aotgrad.masked_attention_backward.default(%go, %q, %k2, %v, none, scale=0.5, output_mask=[true, true, false])
  return (%y, %gk, %gv, %hq, %hk)
})";

// An in-place write of a graph input between the rows: %y reads %x before it, so nothing may move
// past it (no pair); and a forward without the backward's mask.
constexpr const char* kInplaceBetween =
    R"(graph inplace_between(%q: f64[1,2,128,8], %k: f64[1,2,128,8], %v: f64[1,2,128,4], %mask: b8[128,128], %go: f64[1,2,128,4], %x: f64[1,2,128,4]) {
  %a: f64[1,2,128,4] = aotgrad.masked_attention.default(%q, %k, %v, %mask, scale=0.35)
  %y: f64[1,2,128,4] = aten.mul.Tensor(%a, %x)
  %copy_: f64[1,2,128,4] = aten.copy_.default(%x, %go)
  %b: f64[1,2,128,4] = aotgrad.masked_attention.default(%q, %k, %v, none, scale=0.35)
  %z: f64[1,2,128,4] = aten.mul.Tensor(%b, %b)
  %gq: f64[1,2,128,8], %gk: f64[1,2,128,8], %gv: f64[1,2,128,4] = aotgrad.masked_attention_backward.default(%go, %q, %k, %v, %mask, scale=0.35, output_mask=[true, true, true])
  %hq: f64[0], %hk: f64[0], %hv: f64[1,2,128,4] = aotgrad.masked_attention_backward.default(%go, %q, %k, %v, %mask, scale=0.35, output_mask=[false, false, true])
  return (%y, %z, %gq, %gk, %gv, %hv)
})";

std::string code_of(const std::string& text, bool pairs = true) {
  ag::backends::CppOptions o;
  o.attention_pairs = pairs;
  return ag::backends::cpp_code(ag::graph::parse_graph(text), o);
}

}  // namespace

TEST(CppAttentionPair, ARecomputedAttentionRunsWithItsBackward) {
  const std::string code = code_of(kRecomputed);
  EXPECT_TRUE(ag::testing::contains(
      code,
      "extern aotgrad.masked_attention_backward.default + aotgrad.masked_attention.default (one "
      "pass over the weights) -> %gq %gk %gv %a"))
      << code;
  EXPECT_FALSE(ag::testing::contains(code, "extern aotgrad.masked_attention.default ->")) << code;
  // The forward's readers run after the pair: the clone's kernel comes after its step.
  EXPECT_LT(code.find("masked_attention_backward"), code.find("-> %c")) << code;
  // Off: two extern steps, as before.
  const std::string off = code_of(kRecomputed, false);
  EXPECT_TRUE(ag::testing::contains(off, "extern aotgrad.masked_attention.default -> %a")) << off;
  ag::testing::expect_cpp_matches_interpreter(kRecomputed, {0, 0});
}

TEST(CppAttentionPair, NotWhenTheOutputGradientReadsTheOutput) {
  const std::string code = code_of(kDependent);
  EXPECT_TRUE(ag::testing::contains(code, "extern aotgrad.masked_attention.default -> %a")) << code;
  EXPECT_FALSE(ag::testing::contains(code, "one pass over the weights")) << code;
  ag::testing::expect_cpp_matches_interpreter(kDependent, {0, 0});
}

TEST(CppAttentionPair, PairsOnlyMatchingRowsAndEachOnce) {
  const std::string code = code_of(kMixed);
  EXPECT_TRUE(ag::testing::contains(code,
                                    "+ aotgrad.masked_attention.default (one pass over the "
                                    "weights) -> %gq %gk %gv %c"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code,
                                    "+ aotgrad.masked_attention.default (one pass over the "
                                    "weights) -> %hq %hk %hv %b"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code, "extern aotgrad.masked_attention.default -> %a")) << code;
  ag::testing::expect_cpp_matches_interpreter(kMixed, {1e-6, 1e-5});
  // The reordered graph still computes every value after its inputs.
  ag::graph::Graph g = ag::graph::parse_graph(kMixed);
  std::vector<ag::backends::cpp::AttentionPair> pairs = ag::backends::cpp::pair_attention(g);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_NO_THROW(ag::graph::verify_graph(g));
  for (const auto& p : pairs) {
    EXPECT_EQ(g.nodes()[p.forward].op->name, "aotgrad.masked_attention.default");
    EXPECT_EQ(g.nodes()[p.backward].op->name, "aotgrad.masked_attention_backward.default");
    EXPECT_LT(p.backward, p.forward);
  }
}

// A transformer block under a memory budget that recomputes its attention but keeps the residual
// stream (so that the attention's output gradient does not read its output): the backward graph
// holds the pair, and the gradients are eager's.
TEST(CppAttentionPair, ABudgetedBlockTrainsLikeEager) {
  auto block = std::make_shared<ag::nn::TransformerBlock>(256, 4, 128, 1024);
  ag::Tensor x = ag::randn({1, 128, 256}), target = ag::randn({1, 128, 256});
  ag::AotConfig cfg;
  cfg.fw_compiler = "cpp";
  cfg.partitioner = "min_cut";
  cfg.activation_memory_budget = 0.5;
  auto compiled = ag::aot_module(block, cfg);
  block->zero_grad(true);
  ag::mse_loss(block->forward(x), target).backward();
  std::vector<ag::Tensor> eager;
  for (const ag::Tensor& p : block->parameters()) eager.push_back(p.grad().detach().clone());
  block->zero_grad(true);
  ag::mse_loss(compiled(x), target).backward();
  const std::vector<ag::Tensor> params = block->parameters();
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(ag::testing::allclose(params[i].grad(), eager[i], 1e-5, 1e-4)) << i;
  const std::string backward = compiled.graphs().backward;
  EXPECT_TRUE(ag::testing::contains(backward, "aotgrad.masked_attention.default(")) << backward;
  const std::string code = ag::backends::cpp_code(ag::graph::parse_graph(backward));
  EXPECT_TRUE(ag::testing::contains(code, "one pass over the weights")) << code;
}

TEST(CppAttentionPair, NotAcrossAnInPlaceWriteNorWithAnotherMask) {
  const std::string code = code_of(kInplaceBetween);
  EXPECT_FALSE(ag::testing::contains(code, "one pass over the weights")) << code;
  EXPECT_TRUE(ag::testing::contains(code, "extern aotgrad.masked_attention.default -> %a")) << code;
  EXPECT_TRUE(ag::testing::contains(code, "extern aotgrad.masked_attention.default -> %b")) << code;
  // Each backend on its own copy of the inputs (the graph writes %x).
  ag::graph::Graph g = ag::graph::parse_graph(kInplaceBetween);
  const std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 3);
  auto copies = [&] {
    std::vector<ag::Tensor> c;
    for (const ag::Tensor& t : in) c.push_back(t.clone());
    return c;
  };
  std::vector<ag::Tensor> got = ag::backends::compile_cpp(g)(copies());
  std::vector<ag::Tensor> want = ag::backends::compile_interpreter(g)(copies());
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_TRUE(ag::testing::allclose(got[i], want[i], 0, 0)) << "output " << i;
}
