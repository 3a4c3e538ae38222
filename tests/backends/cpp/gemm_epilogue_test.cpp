// GEMM epilogues: a linear layer's product with its activation and residual add as oneDNN
// post-ops, never swallowing a value something else needs (a saved activation input), and
// falling back to the unfused ops when oneDNN cannot take the actual tensors.
#include <gtest/gtest.h>

#include "backends/cpp/cpp_test_util.h"
#include "backends/cpp/schedule.h"
#include "kernels/gemm.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace cpp = aotgrad::backends::cpp;

namespace {

// A transformer block's output projection: flatten, addmm with a transposed weight, unflatten,
// residual add.
constexpr const char* kProjection =
    R"(graph proj(%x: f32[2,8,16], %y: f32[2,8,16], %w: f32[16,16], %b: f32[16]) {
  %f: f32[16,16] = aten.view.default(%y, [16, 16])
  %wt: f32[16,16]{1,16} = aten.t.default(%w)
  %mm: f32[16,16] = aten.addmm.default(%b, %f, %wt)
  %u: f32[2,8,16] = aten.view.default(%mm, [2, 8, 16])
  %h: f32[2,8,16] = aten.add.Tensor(%x, %u)
  %r: f32[2,8,16] = aten.relu.default(%h)
  return (%r, %h)
})";

}  // namespace

TEST(CppGemmEpilogue, AResidualAddThroughViewsJoinsTheProduct) {
  ag::graph::Graph g = ag::graph::parse_graph(kProjection);
  cpp::Schedule s = cpp::schedule_graph(g);
  ASSERT_EQ(s.gemms.size(), 1u);
  EXPECT_EQ(s.gemms[0].nodes, (std::vector<uint32_t>{2, 3, 4}));  // addmm, view, add
  EXPECT_EQ(s.gemms[0].residual, static_cast<int64_t>(g.inputs()[0].index));
  EXPECT_EQ(s.gemms[0].activation, ag::kernels::GemmActivation::none);
  // The relu after the add reads %h, which leaves the graph: it stays a kernel, after the GEMM.
  ASSERT_EQ(s.steps.size(), 4u);  // view, t, gemm, kernel
  EXPECT_TRUE(s.steps[2].is_gemm);
  EXPECT_TRUE(s.steps[3].is_kernel);
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 3),
                                              ag::testing::kF32Tolerances);
}

// relu fuses as a post-op, and the residual add after it. gelu does not (oneDNN's gelu loses
// the negative tail, see gemm_fusion.cpp): the product, then the eager gelu kernel, bit for bit
// what the interpreter computes.
TEST(CppGemmEpilogue, ActivationsThenResidualMatchTheInterpreter) {
  for (const char* act : {"aten.relu.default(%mm)", "aten.gelu.default(%mm)",
                          "aten.gelu.default(%mm, approximate=\"tanh\")"}) {
    ag::graph::Graph g = ag::graph::parse_graph(
        std::string(R"(graph act(%x: f32[32,24], %w: f32[24,40], %b: f32[40], %res: f32[32,40]) {
  %mm: f32[32,40] = aten.addmm.default(%b, %x, %w)
  %a: f32[32,40] = )") +
        act + R"(
  %o: f32[32,40] = aten.add.Tensor(%a, %res)
  return (%o)
})");
    cpp::Schedule s = cpp::schedule_graph(g);
    const bool relu = std::string(act).find("relu") != std::string::npos;
    if (relu) {
      ASSERT_EQ(s.gemms.size(), 1u) << act;
      EXPECT_EQ(s.gemms[0].activation, ag::kernels::GemmActivation::relu);
      EXPECT_EQ(s.gemms[0].nodes.size(), 3u);
      ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 4),
                                                  ag::testing::kF32Tolerances, act);
    } else {
      EXPECT_TRUE(s.gemms.empty()) << act;
      ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 4), {0, 0}, act);
    }
  }
}

TEST(CppGemmEpilogue, AValueSavedForTheBackwardIsNotFusedAway) {
  // Training: gelu's input leaves the forward (gelu_backward needs it), so the product is stored
  // and gelu stays a kernel; the second product's residual add still fuses.
  ag::graph::Graph g =
      ag::graph::parse_graph(R"(graph fw(%x: f32[8,16], %w1: f32[16,32], %w2: f32[32,16]) {
  %h: f32[8,32] = aten.mm.default(%x, %w1)
  %a: f32[8,32] = aten.gelu.default(%h)
  %o: f32[8,16] = aten.mm.default(%a, %w2)
  %y: f32[8,16] = aten.add.Tensor(%o, %x)
  return (%y, %h, %a)
})");
  cpp::Schedule s = cpp::schedule_graph(g);
  ASSERT_EQ(s.gemms.size(), 1u);
  EXPECT_EQ(s.gemms[0].nodes, (std::vector<uint32_t>{2, 3}));
  ag::testing::expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 5),
                                              ag::testing::kF32Tolerances);
}

TEST(CppGemmEpilogue, FallsBackToTheUnfusedOpsWhenOneDnnCannot) {
  EXPECT_FALSE(ag::kernels::mm_epilogue(ag::zeros({2, 3}, ag::DType::f64),
                                        ag::zeros({3, 2}, ag::DType::f64), {}, {2, 2})
                   .defined());
  // A residual passed with another layout than traced (transposed): the runner runs the ops.
  ag::graph::Graph g =
      ag::graph::parse_graph(R"(graph fb(%x: f32[6,4], %w: f32[4,6], %r: f32[6,6]) {
  %mm: f32[6,6] = aten.mm.default(%x, %w)
  %o: f32[6,6] = aten.add.Tensor(%mm, %r)
  return (%o)
})");
  ASSERT_EQ(cpp::schedule_graph(g).gemms.size(), 1u);
  std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 6);
  in[2] = in[2].t();
  ag::testing::expect_cpp_matches_interpreter(g, in, ag::testing::kF32Tolerances);
}

TEST(CppGemmEpilogue, ResidualAddIsBitIdenticalToTheUnfusedOps) {
  ag::Tensor a = ag::testing::test_input({64, 48}, -1.0, 1.0, 1, false).to(ag::DType::f32);
  ag::Tensor b = ag::testing::test_input({32, 48}, -1.0, 1.0, 2, false).to(ag::DType::f32).t();
  ag::Tensor bias = ag::testing::test_input({32}, -1.0, 1.0, 3, false).to(ag::DType::f32);
  ag::Tensor res = ag::testing::test_input({64, 32}, -1.0, 1.0, 4, false).to(ag::DType::f32);
  ag::kernels::GemmEpilogue e{bias, ag::kernels::GemmActivation::relu, res};
  ag::Tensor fused = ag::kernels::mm_epilogue(a, b, e, {64, 32});
  ASSERT_TRUE(fused.defined());
  ag::Tensor unfused = (ag::kernels::addmm(bias, a, b, 1, 1).relu() + res);
  EXPECT_EQ(fused.to_vector<float>(), unfused.to_vector<float>());
}
