// Cat without a copy (cpp backend, cat_fusion.h): kernels write their results straight into their
// slices of a cat's result, the cat step copies only the rest, and the values are the
// interpreter's, bit for bit, also when a kernel falls back at run time or the fusion must not
// apply.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "backends/cpp/cpp_test_util.h"
#include "backends/cpp/schedule.h"
#include "testing/values.h"

namespace ag = aotgrad;

namespace {

// The head gradients of an attention backward, joined into the qkv gradient: q and v are
// transposed heads copied by a clone kernel (written in place), k a strided view of a graph input
// (copied by the cat step). %kept is a kernel result the graph also returns, so its cat must
// stay a plain extern call; the kernel computing it also writes two parts of %cat_2 in place.
constexpr const char* kQkvGrad =
    R"(graph qkv_grad(%gq: f32[4,4,3], %gk: f32[4,3,4], %gv: f32[4,4,3]) {
  %v1: f32[2,2,4,3] = aten.view.default(%gq, size=[2, 2, 4, 3])
  %t1: f32[2,4,2,3]{24,3,12,1} = aten.transpose.int(%v1, dim0=1, dim1=2)
  %c1: f32[2,4,2,3] = aten.clone.default(%t1)
  %u1: f32[2,4,6] = aten._unsafe_view.default(%c1, size=[2, 4, 6])
  %v2: f32[2,2,3,4] = aten.view.default(%gk, size=[2, 2, 3, 4])
  %t2: f32[2,2,4,3]{24,12,1,4} = aten.transpose.int(%v2, dim0=-2, dim1=-1)
  %t3: f32[2,4,2,3]{24,1,12,4} = aten.transpose.int(%t2, dim0=1, dim1=2)
  %w2: f32[2,4,6]{24,1,4} = aten.view.default(%t3, size=[2, 4, 6])
  %v3: f32[2,2,4,3] = aten.view.default(%gv, size=[2, 2, 4, 3])
  %t4: f32[2,4,2,3]{24,3,12,1} = aten.transpose.int(%v3, dim0=1, dim1=2)
  %c3: f32[2,4,2,3] = aten.clone.default(%t4)
  %s3: f32[2,4,2,3] = aten.mul.Scalar(%c3, other=0.5)
  %u3: f32[2,4,6] = aten._unsafe_view.default(%s3, size=[2, 4, 6])
  %cat: f32[2,4,18] = aten.cat.default([%u1, %w2, %u3], dim=2)
  %kept: f32[4,4,3] = aten.neg.default(%gq)
  %a: f32[4,4,3] = aten.abs.default(%gv)
  %h: f32[4,4,3] = aten.mul.Scalar(%gv, other=0.5)
  %cat_1: f32[8,4,3] = aten.cat.default([%kept, %gv], dim=0)
  %cat_2: f32[12,4,3] = aten.cat.default([%h, %gq, %a], dim=-3)
  return (%cat, %cat_1, %kept, %cat_2)
})";

std::vector<float> values(const ag::Tensor& t) {
  return t.contiguous().to_vector<float>();
}

}  // namespace

TEST(CppCatFusion, ScheduleWritesOnlySingleUseKernelResultsInPlace) {
  ag::graph::Graph g = ag::graph::parse_graph(kQkvGrad);
  std::string code = ag::backends::cpp_code(g);
  EXPECT_TRUE(ag::testing::contains(code, "cat -> %cat (%u1 in place, %w2 copied, %u3 in place)"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code, "-> %c1 (into %cat)")) << code;
  EXPECT_TRUE(ag::testing::contains(code, "extern aten.cat.default -> %cat_1")) << code;
  EXPECT_TRUE(ag::testing::contains(code, "-> %kept %a (into %cat_2) %h (into %cat_2)")) << code;
  EXPECT_TRUE(ag::testing::contains(code, "cat -> %cat_2 (%h in place, %gq copied, %a in place)"))
      << code;
  // The views into the cat run no step of their own.
  EXPECT_FALSE(ag::testing::contains(code, "extern aten._unsafe_view.default")) << code;
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ASSERT_EQ(s.cats.size(), 2u);
  // %u3 sits at column 12 of each row of 18; the kernel loops over [2,4,2,3] dim by dim.
  const ag::backends::cpp::CatPart& v = s.cats[0].parts[2];
  ASSERT_GE(v.kernel, 0);
  const ag::backends::cpp::Kernel& k = s.kernels[v.kernel];
  ASSERT_EQ(k.out_cat.size(), k.outputs.size());
  EXPECT_EQ(k.out_cat[0].offset, 12);
  EXPECT_EQ(k.out_cat[0].strides, (ag::IntList{72, 18, 3, 1}));
}

TEST(CppCatFusion, MatchesTheInterpreterBitwiseAlsoWhenAKernelFallsBack) {
  ag::graph::Graph g = ag::graph::parse_graph(kQkvGrad);
  ag::backends::CompiledGraph cpp = ag::backends::compile_cpp(g);
  ag::backends::CompiledGraph ref = ag::backends::compile_interpreter(g);
  std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 3);
  // Second call: %gq arrives transposed in memory, so the clone kernel reading it falls back to
  // its nodes and the cat step copies %u1 after all.
  std::vector<ag::Tensor> strided = inputs;
  strided[0] =
      ag::testing::test_input({4, 3, 4}, -1.0, 1.0, 9, false).to(ag::DType::f32).transpose(1, 2);
  ASSERT_FALSE(strided[0].is_contiguous());
  for (const auto& in : {inputs, strided}) {
    std::vector<ag::Tensor> a = in, b = in;
    std::vector<ag::Tensor> got = cpp(std::move(a));
    std::vector<ag::Tensor> want = ref(std::move(b));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].sizes(), want[i].sizes()) << i;
      EXPECT_EQ(values(got[i]), values(want[i])) << "output " << i;
    }
  }
}

// The transformer block's backward (a small one): the q/k/v head gradients go into the qkv
// gradient's cat in place, and every output is what the same schedule without the fusion gives.
TEST(CppCatFusion, TransformerBlockBackwardIsBitIdenticalToTheUnfusedSchedule) {
  ag::manual_seed(5);
  auto block = std::make_shared<ag::nn::TransformerBlock>(8, 2, 4, 16);
  auto backward = std::make_shared<ag::graph::Graph>();
  ag::AotConfig cfg;
  // The composite's backward (the fused attention row would recompute weights from the random
  // mask below, and a fully masked row is NaN, which no two runs compare equal on).
  cfg.fuse_attention = false;
  cfg.bw_compiler_fn = [backward](const ag::GraphView& g) {
    *backward = g.graph();
    return ag::compile_with("interpreter", g);
  };
  auto compiled = ag::aot_module(block, cfg);
  ag::sum(compiled(ag::randn({2, 4, 8}))).backward();
  ASSERT_FALSE(backward->nodes().empty());
  EXPECT_TRUE(ag::testing::contains(ag::backends::cpp_code(*backward), " in place"));
  std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(*backward, 11);
  ag::backends::CompiledGraph fused = ag::backends::compile_cpp(*backward);
  // Against the same backend without cat fusion, bit for bit: the generated code's own math
  // (exp, reassociated sums) may differ from eager's by an ulp.
  ag::backends::CompiledGraph ref = ag::backends::compile_cpp(*backward, {.cat_fusion = false});
  std::vector<ag::Tensor> a = inputs, b = inputs;
  std::vector<ag::Tensor> got = fused(std::move(a)), want = ref(std::move(b));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (want[i].defined()) {
      EXPECT_EQ(values(got[i]), values(want[i])) << "output " << i;
    }
}

TEST(CppCatFusion, AValueTwiceInOneCatFillsBothSlices) {
  // cat([e, e]): one kernel output, two slices; writing it in place would fill only one.
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph twice(%x: f32[4,3]) {
  %e: f32[4,3] = aten.exp.default(%x)
  %c: f32[8,3] = aten.cat.default([%e, %e], dim=0)
  return (%c)
})");
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 1),
                                              ag::testing::kF32Tolerances);
}
