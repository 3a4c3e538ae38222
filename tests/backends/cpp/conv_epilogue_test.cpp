// Convolution epilogues (CppOptions::conv_epilogues, off by default: slower with this oneDNN):
// a 2-D convolution with its activation and residual add as oneDNN post-ops
// (either order: relu(conv(x) + x) as in a residual block without batch norm, or relu then add),
// the same for matrix products whose add comes first, and the unfused ops whenever oneDNN cannot
// take the actual tensors.
#include <gtest/gtest.h>

#include <string>

#include "backends/cpp/cpp_backend.h"
#include "backends/cpp/cpp_test_util.h"
#include "backends/cpp/schedule.h"
#include "kernels/conv.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace cpp = aotgrad::backends::cpp;
using ag::kernels::GemmActivation;

namespace {

ag::backends::CppOptions conv_options() {
  ag::backends::CppOptions o;
  o.conv_epilogues = true;
  return o;
}
const ag::backends::CppOptions kConv = conv_options();

// A residual block without batch norm: relu(conv(x) + x), and one with the add after the relu.
std::string conv_graph(const std::string& bias, const std::string& tail) {
  return R"(graph block(%x: f32[2,8,6,6], %w: f32[8,8,3,3], %b: f32[8]) {
  %c: f32[2,8,6,6] = aten.convolution.default(%x, %w, )" +
         bias +
         R"(, stride=[1, 1], padding=[1, 1], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=1)
)" + tail + R"(
})";
}

ag::Tensor f32_input(const ag::IntList& sizes, uint64_t seed) {
  return ag::testing::test_input(sizes, -1.0, 1.0, seed, false).to(ag::DType::f32);
}

}  // namespace

TEST(CppConvEpilogue, AResidualBlockIsOneConvolutionStep) {
  ag::graph::Graph g = ag::graph::parse_graph(conv_graph("%b", R"(  %s: f32[2,8,6,6] = aten.add.Tensor(%c, %x)
  %r: f32[2,8,6,6] = aten.relu.default(%s)
  return (%r))"));
  cpp::Schedule s = cpp::schedule_graph(g, true, true, true);
  ASSERT_EQ(s.gemms.size(), 1u);
  const cpp::GemmFusion& f = s.gemms[0];
  EXPECT_TRUE(f.conv);
  EXPECT_EQ(f.nodes, (std::vector<uint32_t>{0, 1, 2}));  // convolution, add, relu
  EXPECT_EQ(f.residual, static_cast<int64_t>(g.inputs()[0].index));
  EXPECT_TRUE(f.residual_first);
  EXPECT_EQ(f.activation, GemmActivation::relu);
  EXPECT_EQ(f.bias, static_cast<int64_t>(g.inputs()[2].index));
  ASSERT_EQ(s.steps.size(), 1u);
  EXPECT_TRUE(s.steps[0].is_gemm);
  EXPECT_NE(ag::backends::cpp_code(g, kConv).find("conv aten.convolution.default + residual %x + relu "
                                           "(oneDNN post-ops) -> %r"),
            std::string::npos)
      << ag::backends::cpp_code(g, kConv);
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 1),
                                              ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppConvEpilogue, ActivationThenResidualWithAndWithoutBiasMatchTheInterpreter) {
  for (const char* bias : {"%b", "none"}) {
    ag::graph::Graph g = ag::graph::parse_graph(conv_graph(bias, R"(  %r: f32[2,8,6,6] = aten.relu.default(%c)
  %s: f32[2,8,6,6] = aten.add.Tensor(%r, %x)
  return (%s))"));
    cpp::Schedule s = cpp::schedule_graph(g, true, true, true);
    ASSERT_EQ(s.gemms.size(), 1u) << bias;
    EXPECT_EQ(s.gemms[0].nodes.size(), 3u);
    EXPECT_FALSE(s.gemms[0].residual_first);
    EXPECT_EQ(s.gemms[0].bias >= 0, std::string(bias) == "%b");
    ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 2),
                                                ag::testing::kF32Tolerances, bias, kConv);
  }
}

TEST(CppConvEpilogue, StridesPaddingDilationAndGroupsReachThePrimitive) {
  ag::graph::Graph g =
      ag::graph::parse_graph(R"(graph g(%x: f32[2,6,11,9], %w: f32[4,3,3,2], %b: f32[4]) {
  %c: f32[2,4,4,5] = aten.convolution.default(%x, %w, %b, stride=[2, 1], padding=[1, 0], dilation=[2, 3], transposed=false, output_padding=[0, 0], groups=2)
  %r: f32[2,4,4,5] = aten.relu.default(%c)
  return (%r)
})");
  cpp::Schedule s = cpp::schedule_graph(g, true, true, true);
  ASSERT_EQ(s.gemms.size(), 1u);
  EXPECT_EQ(s.gemms[0].conv_params.stride, (std::array<int64_t, 2>{2, 1}));
  EXPECT_EQ(s.gemms[0].conv_params.dilation, (std::array<int64_t, 2>{2, 3}));
  EXPECT_EQ(s.gemms[0].conv_params.groups, 2);
  std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 3);
  // Where oneDNN runs the plain convolution, it runs the fused one too.
  if (ag::kernels::conv2d_backend(in[0], in[1], s.gemms[0].conv_params).rfind("onednn", 0) == 0) {
    EXPECT_TRUE(ag::kernels::conv2d_epilogue(in[0], in[1], s.gemms[0].conv_params,
                                             {in[2], GemmActivation::relu, {}, false})
                    .defined());
  }
  ag::testing::expect_cpp_matches_interpreter(g, in, ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppConvEpilogue, ASavedConvolutionResultStaysMaterialized) {
  // Training with batch norm between: nothing to fuse. Without it, relu's input is not saved
  // (threshold_backward reads relu's result), but a convolution result that leaves the forward
  // must be stored, so only what follows it may fuse.
  ag::graph::Graph g = ag::graph::parse_graph(conv_graph("%b", R"(  %r: f32[2,8,6,6] = aten.relu.default(%c)
  return (%r, %c))"));
  EXPECT_TRUE(cpp::schedule_graph(g, true, true, true).gemms.empty());
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 4),
                                              ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppConvEpilogue, TheFusedKernelAgreesWithTheUnfusedOps) {
  ag::Tensor x = f32_input({2, 8, 7, 7}, 1), w = f32_input({16, 8, 3, 3}, 2);
  ag::Tensor b = f32_input({16}, 3), res = f32_input({2, 16, 7, 7}, 4);
  ag::kernels::Conv2dParams p;
  p.padding = {1, 1};
  ag::Tensor conv = ag::kernels::conv2d(x, w, b, p);
  for (bool first : {true, false}) {
    ag::kernels::GemmEpilogue e{b, GemmActivation::relu, res, first};
    ag::Tensor fused = ag::kernels::conv2d_epilogue(x, w, p, e);
    // The residual is a sum post-op, which oneDNN 2.6's convolution takes only before the
    // eltwise one: relu(conv) + res is refused, and the runner runs the ops unfused.
    if (!first && !fused.defined()) continue;
    ASSERT_TRUE(fused.defined()) << first;
    ag::Tensor want = first ? (conv + res).relu() : conv.relu() + res;
    std::vector<float> got = fused.to_vector<float>(), ref = want.to_vector<float>();
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref[i], 1e-5f * (1.0f + std::abs(ref[i]))) << i << " first " << first;
  }
}

TEST(CppConvEpilogue, FallsBackToTheUnfusedOpsWhenOneDnnCannot) {
  ag::kernels::Conv2dParams p;
  ag::kernels::GemmEpilogue relu{{}, GemmActivation::relu, {}, false};
  EXPECT_FALSE(ag::kernels::conv2d_epilogue(ag::zeros({1, 2, 3, 3}, ag::DType::f64),
                                            ag::zeros({2, 2, 1, 1}, ag::DType::f64), p, relu)
                   .defined());
  // A residual of another layout than traced (channels last): the runner runs the three ops.
  ag::graph::Graph g = ag::graph::parse_graph(conv_graph("%b", R"(  %s: f32[2,8,6,6] = aten.add.Tensor(%c, %x)
  %r: f32[2,8,6,6] = aten.relu.default(%s)
  return (%r))"));
  ASSERT_EQ(cpp::schedule_graph(g, true, true, true).gemms.size(), 1u);
  std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 5);
  in[0] = in[0].permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});
  ASSERT_FALSE(in[0].is_contiguous());
  ag::testing::expect_cpp_matches_interpreter(g, in, ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppGemmEpilogue, AResidualAddBeforeTheActivationJoinsTheProduct) {
  ag::graph::Graph g =
      ag::graph::parse_graph(R"(graph g(%x: f32[32,24], %w: f32[24,40], %b: f32[40], %res: f32[32,40]) {
  %mm: f32[32,40] = aten.addmm.default(%b, %x, %w)
  %s: f32[32,40] = aten.add.Tensor(%res, %mm)
  %r: f32[32,40] = aten.relu.default(%s)
  return (%r)
})");
  cpp::Schedule s = cpp::schedule_graph(g, true, true, true);
  ASSERT_EQ(s.gemms.size(), 1u);
  EXPECT_EQ(s.gemms[0].nodes, (std::vector<uint32_t>{0, 1, 2}));
  EXPECT_TRUE(s.gemms[0].residual_first);
  EXPECT_FALSE(s.gemms[0].conv);
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 6),
                                              ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppGemmEpilogue, TwoProductsAddedTogetherShareTheirAddWithNoOne) {
  // Both products reach the add; only the first takes it (the other is its residual), else the
  // add would be computed twice, each time with a result not yet written.
  ag::graph::Graph g = ag::graph::parse_graph(
      R"(graph g(%a: f32[16,8], %b: f32[8,12], %c: f32[16,4], %d: f32[4,12]) {
  %p: f32[16,12] = aten.mm.default(%a, %b)
  %q: f32[16,12] = aten.mm.default(%c, %d)
  %s: f32[16,12] = aten.add.Tensor(%p, %q)
  return (%s)
})");
  cpp::Schedule s = cpp::schedule_graph(g, true, true, true);
  ASSERT_EQ(s.gemms.size(), 1u);
  EXPECT_EQ(s.gemms[0].nodes, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(s.gemms[0].residual, static_cast<int64_t>(g.nodes()[1].outputs[0].index));
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 7),
                                              ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppConvEpilogue, TwoConvolutionsAddedTogetherMatchTheInterpreter) {
  // LR-ASPP's head: low_classifier(low) + high_classifier(high), both 1x1 convolutions.
  ag::graph::Graph g = ag::graph::parse_graph(
      R"(graph g(%x: f32[2,4,5,5], %y: f32[2,6,5,5], %w1: f32[3,4,1,1], %b1: f32[3], %w2: f32[3,6,1,1], %b2: f32[3]) {
  %p: f32[2,3,5,5] = aten.convolution.default(%x, %w1, %b1, stride=[1, 1], padding=[0, 0], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=1)
  %q: f32[2,3,5,5] = aten.convolution.default(%y, %w2, %b2, stride=[1, 1], padding=[0, 0], dilation=[1, 1], transposed=false, output_padding=[0, 0], groups=1)
  %s: f32[2,3,5,5] = aten.add.Tensor(%p, %q)
  return (%s)
})");
  cpp::Schedule s = cpp::schedule_graph(g, true, true, true);
  ASSERT_EQ(s.gemms.size(), 1u);
  EXPECT_EQ(s.gemms[0].nodes, (std::vector<uint32_t>{0, 2}));
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 8),
                                              ag::testing::kF32Tolerances, "", kConv);
}

TEST(CppConvEpilogue, OffByDefault) {
  ag::graph::Graph g = ag::graph::parse_graph(conv_graph("%b", R"(  %r: f32[2,8,6,6] = aten.relu.default(%c)
  return (%r))"));
  EXPECT_TRUE(cpp::schedule_graph(g).gemms.empty());
  EXPECT_EQ(cpp::schedule_graph(g, true, true, true).gemms.size(), 1u);
}
