// An attention backward writing its gradients straight into the qkv gradient's cat (cpp backend,
// cat_fusion.h): the transposes and clones that move each gradient back to the heads' layout run
// no step, the values are the interpreter's bit for bit (tiled and untiled kernels, with and
// without the paired forward), and a gradient anything else reads is still copied.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "backends/cpp/cpp_test_util.h"
#include "backends/cpp/schedule.h"
#include "kernels/attention.h"
#include "testing/values.h"

namespace ag = aotgrad;

namespace {

// The backward of a fused qkv projection's split and head transposes, B = 2, H = 2, T = 128,
// D = 8: each gradient transposed to [B, T, H, D], cloned, viewed as [B, T, H D], and the three
// joined along the last dim. RETURNED names the graph's extra outputs.
std::string heads_grad(const std::string& t, const std::string& returned = "") {
  const std::string g4 = t + "[2,2,128,8]", th = t + "[2,128,2,8]";
  std::string text = "graph heads_grad(%q: " + g4 + ", %k: " + g4 + ", %v: " + g4 +
                     ", %mask: b8[128,128], %go: " + g4 + ") {\n";
  text += "  %gq: " + g4 + ", %gk: " + g4 + ", %gv: " + g4 +
          " = aotgrad.masked_attention_backward.default(%go, %q, %k, %v, %mask, scale=0.35, "
          "output_mask=[true, true, true])\n";
  const char* grads[] = {"gq", "gk", "gv"};
  for (int i = 0; i < 3; ++i) {
    const std::string n = std::to_string(i);
    text += "  %t" + n + ": " + th + "{2048,8,1024,1} = aten.transpose.int(%" + grads[i] +
            ", dim0=1, dim1=2)\n";
    text += "  %c" + n + ": " + th + " = aten.clone.default(%t" + n + ")\n";
    text += "  %u" + n + ": " + t + "[2,128,16] = aten._unsafe_view.default(%c" + n +
            ", size=[2, 128, 16])\n";
  }
  text += "  %cat: " + t + "[2,128,48] = aten.cat.default([%u0, %u1, %u2], dim=2)\n";
  return text + "  return (%cat" + returned + ")\n}\n";
}

// q, k, v and the output gradient in [-1, 1), and a causal mask (true above the diagonal: the
// kernels' tiled path) or a pattern with no empty block (their untiled path).
std::vector<ag::Tensor> inputs(const ag::graph::Graph& g, bool causal) {
  std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 11);
  std::vector<uint8_t> bits(128 * 128);
  for (int64_t i = 0; i < 128; ++i)
    for (int64_t j = 0; j < 128; ++j)
      bits[static_cast<size_t>(i * 128 + j)] = causal ? j > i : (i * 7 + j * 3) % 5 == 0;
  std::vector<int64_t> as_int(bits.begin(), bits.end());
  in[3] = ag::from_vector(as_int, {128, 128}).ne(ag::Scalar(0));
  return in;
}

// cpp against the interpreter, bit for bit, on both kinds of mask.
void expect_bitwise_under_both_masks(const ag::graph::Graph& g) {
  for (bool causal : {true, false}) {
    SCOPED_TRACE(causal ? "causal mask (tiled)" : "no empty block (untiled)");
    ag::testing::expect_cpp_matches_interpreter(g, inputs(g, causal), {0, 0});
  }
}

}  // namespace

TEST(CppAttentionIntoCat, TheGradientsAreWrittenIntoTheCatWithoutTheirCopies) {
  ag::graph::Graph g = ag::graph::parse_graph(heads_grad("f32"));
  const std::string code = ag::backends::cpp_code(g);
  EXPECT_TRUE(ag::testing::contains(code,
                                    "extern aotgrad.masked_attention_backward.default -> %gq (into "
                                    "%cat) %gk (into %cat) %gv (into %cat)"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code, "cat -> %cat (%u0 in place, %u1 in place, %u2 in place)"))
      << code;
  EXPECT_FALSE(ag::testing::contains(code, "transpose")) << code;
  EXPECT_FALSE(ag::testing::contains(code, "kernel")) << code;  // the clones' kernels are gone
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ASSERT_EQ(s.cats.size(), 1u);
  EXPECT_TRUE(s.kernels.empty());
  // dk: column 16 of each row of 48; per [B, H, T, D] dim: a batch is 128 rows, a head 8 columns.
  const ag::backends::cpp::CatPart& dk = s.cats[0].parts[1];
  EXPECT_EQ(dk.attention_result, 1);
  EXPECT_EQ(dk.offset, 16);
  EXPECT_EQ(dk.strides, (ag::IntList{6144, 8, 48, 1}));
  expect_bitwise_under_both_masks(g);
}

TEST(CppAttentionIntoCat, AGradientReadElsewhereIsCopiedAndF64MatchesToo) {
  ag::graph::Graph g = ag::graph::parse_graph(heads_grad("f64", ", %gk"));
  const std::string code = ag::backends::cpp_code(g);
  EXPECT_TRUE(ag::testing::contains(code,
                                    "extern aotgrad.masked_attention_backward.default -> %gq (into "
                                    "%cat) %gk %gv (into %cat)"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code, "cat -> %cat (%u0 in place, %u1 in place, %u2 in place)"))
      << code;  // %u1 is the clone's kernel's, written in place as before
  EXPECT_TRUE(ag::testing::contains(code, "-> %c1 (into %cat)")) << code;
  ag::testing::expect_cpp_matches_interpreter(g, inputs(g, true), {0, 0});
}

TEST(CppAttentionIntoCat, WithTheRecomputedForwardAsOnePair) {
  // A budget below 1 recomputes the attention for a weight gradient (%wg); the pair's step then
  // also writes the gradients into the cat.
  std::string text = heads_grad("f64", ", %wg");
  const std::string recompute =
      "  %a: f64[2,2,128,8] = aotgrad.masked_attention.default(%q, %k, %v, %mask, scale=0.35)\n"
      "  %wg: f64[2,2,128,8] = aten.mul.Tensor(%a, %a)\n";
  text.insert(text.find("  %gq"), recompute);
  ag::graph::Graph g = ag::graph::parse_graph(text);
  const std::string code = ag::backends::cpp_code(g);
  EXPECT_TRUE(ag::testing::contains(
      code,
      "extern aotgrad.masked_attention_backward.default + aotgrad.masked_attention.default (one "
      "pass over the weights) -> %gq (into %cat) %gk (into %cat) %gv (into %cat) %a"))
      << code;
  expect_bitwise_under_both_masks(g);
}

TEST(CppAttentionIntoCat, TheKernelWritesAGivenBufferOrRefusesItInOneLine) {
  ag::Tensor q = ag::testing::test_input({1, 4, 8}, -1, 1, 1, false).to(ag::DType::f32);
  ag::Tensor k = ag::testing::test_input({1, 4, 8}, -1, 1, 2, false).to(ag::DType::f32);
  ag::Tensor v = ag::testing::test_input({1, 4, 8}, -1, 1, 3, false).to(ag::DType::f32);
  ag::Tensor go = ag::testing::test_input({1, 4, 8}, -1, 1, 4, false).to(ag::DType::f32);
  const std::array<bool, 3> all{true, true, true};
  auto want = ag::kernels::masked_attention_backward(go, q, k, v, ag::Tensor(), 0.5, all);
  // dv into columns 8..15 of a [1, 4, 16] buffer: the same values, the rest untouched.
  ag::Tensor buffer = ag::zeros({1, 4, 16});
  auto got = ag::kernels::masked_attention_backward(
      go, q, k, v, ag::Tensor(), 0.5, all, {ag::Tensor(), ag::Tensor(), buffer.slice(2, 8, 16)});
  EXPECT_EQ(ag::testing::values(buffer.slice(2, 8, 16)), ag::testing::values(want[2]));
  EXPECT_EQ(ag::testing::values(buffer.slice(2, 0, 8)), std::vector<float>(32, 0.0f));
  EXPECT_EQ(got[2].data_ptr(), buffer.slice(2, 8, 16).data_ptr());  // returned as given
  EXPECT_EQ(ag::testing::values(got[0]), ag::testing::values(want[0]));
  // Seven columns, or rows that overlap: one line naming the gradient.
  for (const ag::Tensor& bad : {buffer.slice(2, 0, 7), buffer.as_strided({1, 4, 8}, {64, 4, 1})}) {
    try {
      ag::kernels::masked_attention_backward(go, q, k, v, ag::Tensor(), 0.5, all,
                                             {bad, ag::Tensor(), ag::Tensor()});
      ADD_FAILURE() << "accepted " << ag::shape_to_string(bad.sizes());
    } catch (const std::invalid_argument& e) {
      EXPECT_TRUE(ag::testing::contains(e.what(), "the buffer given for dq must be")) << e.what();
    }
  }
}
