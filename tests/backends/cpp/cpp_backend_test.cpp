// The cpp backend against the interpreter on small graphs: fused pointwise chains, broadcasting,
// strided (transposed, expanded) inputs, masks, extern calls in between, inputs whose layout
// differs from the traced one, and the build's error paths.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/cpp/build.h"
#include "backends/cpp/cpp_test_util.h"
#include "backends/cpp/schedule.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::testing::expect_cpp_matches_interpreter;

TEST(CppBackend, FusesAPointwiseChainWithBroadcasting) {
  expect_cpp_matches_interpreter(R"(graph f(%x: f64[4,8], %b: f64[8], %s: f64[]) {
  %m: f64[4,8] = aten.mul.Tensor(%x, %x)
  %a: f64[4,8] = aten.add.Tensor(%m, %b, alpha=2)
  %t: f64[4,8] = aten.tanh.default(%a)
  %r: f64[4,8] = aten.relu.default(%t)
  %d: f64[4,8] = aten.div.Tensor(%r, %s)
  return (%d, %t)
})");
}

TEST(CppBackend, RepeatedKernelsShareOneBodyAndStillComputeTheirOwnValues) {
  expect_cpp_matches_interpreter(R"(graph f(%x: f32[4,8], %b: f32[8], %w: f32[8,8]) {
  %a: f32[4,8] = aten.add.Tensor(%x, %b)
  %r: f32[4,8] = aten.relu.default(%a)
  %m: f32[4,8] = aten.mm.default(%r, %w)
  %a2: f32[4,8] = aten.add.Tensor(%m, %b)
  %r2: f32[4,8] = aten.relu.default(%a2)
  return (%r2, %r)
})",
                                 ag::testing::kF32Tolerances);
}

TEST(CppBackend, OnlyTheValuesNeededOutsideAKernelGetBuffers) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f32[4,8], %w: f32[8,3]) {
  %e: f32[4,8] = aten.exp.default(%x)
  %n: f32[4,8] = aten.neg.default(%e)
  %mm: f32[4,3] = aten.mm.default(%n, %w)
  %s: f32[4,3] = aten.sigmoid.default(%mm)
  return (%s)
})");
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ASSERT_EQ(s.kernels.size(), 2u);
  EXPECT_EQ(s.kernels[0].nodes, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(s.kernels[0].outputs, (std::vector<uint32_t>{3}));  // %n only, not %e
  ASSERT_EQ(s.steps.size(), 3u);
  EXPECT_FALSE(s.steps[1].is_kernel);  // mm: an extern call
  expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 3), ag::testing::kF32Tolerances);
}

TEST(CppBackend, ReadsTransposedAndExpandedInputsInPlace) {
  expect_cpp_matches_interpreter(R"(graph f(%x: f64[8,4], %y: f64[4,1]) {
  %t: f64[4,8]{1,4} = aten.t.default(%x)
  %e: f64[4,8]{1,0} = aten.expand.default(%y, [4, 8])
  %p: f64[4,8]{1,4} = aten.permute.default(%x, [1, 0])
  %a: f64[4,8] = aten.mul.Tensor(%t, %e)
  %b: f64[4,8] = aten.sub.Tensor(%a, %p)
  return (%b)
})");
}

TEST(CppBackend, MasksAndComparisons) {
  expect_cpp_matches_interpreter(R"(graph f(%x: f32[16,8], %m: b8[16,8], %y: f32[8]) {
  %g: b8[16,8] = aten.gt.Tensor(%x, %y)
  %w: f32[16,8] = aten.where.self(%g, %x, %y)
  %f: f32[16,8] = aten.masked_fill.Scalar(%w, %m, 0.5)
  %th: f32[16,8] = aten.threshold_backward.default(%f, %x, 0)
  return (%th, %g)
})",
                                 ag::testing::kF32Tolerances);
}

TEST(CppBackend, GeluAndItsBackwardBothApproximations) {
  expect_cpp_matches_interpreter(R"(graph f(%x: f32[64,300], %g: f32[64,300]) {
  %a: f32[64,300] = aten.gelu.default(%x)
  %b: f32[64,300] = aten.gelu.default(%x, approximate="tanh")
  %c: f32[64,300] = aten.gelu_backward.default(%g, %a)
  %d: f32[64,300] = aten.gelu_backward.default(%g, %b, approximate="tanh")
  %e: f32[64,300] = aten.exp.default(%d)
  %t: f32[64,300] = aten.tanh.default(%e)
  return (%a, %b, %c, %t)
})",
                                 ag::testing::kF32Tolerances);
}

// gelu and its backward run as the eager kernels (no fusion expression, no oneDNN post-op): bit
// for bit the interpreter's values, in the negative tail too, where the textbook formula the
// generated code and oneDNN used cancelled (f32: 15% off at x = -4.9, 0 for -2.1e-32 at x = -12).
TEST(CppBackend, GeluIsEagersToTheBitInTheNegativeTail) {
  for (const char* approximate : {"none", "tanh"}) {
    for (const char* t : {"f32", "f64"}) {
      const std::string a = std::string("approximate=\"") + approximate + "\"";
      const std::string ty = std::string(t) + "[512,1]";
      ag::graph::Graph g = ag::graph::parse_graph(
          "graph f(%x: " + ty + ", %w: " + t + "[1,1], %g: " + ty + ") {\n  %h: " + ty +
          " = aten.mm.default(%x, %w)\n  %y: " + ty + " = aten.gelu.default(%h, " + a +
          ")\n  %d: " + ty + " = aten.gelu_backward.default(%g, %x, " + a + ")\n  %s: " + ty +
          " = aten.mul.Tensor(%y, %d)\n  return (%y, %d, %s)\n}\n");
      for (const ag::graph::Node& n : g.nodes())
        EXPECT_TRUE(n.op->fusion_expr.empty() ||
                    n.op->name.find("gelu") == std::string::npos);
      const ag::DType dtype = std::string(t) == "f32" ? ag::DType::f32 : ag::DType::f64;
      // 512 points from -16 to 4.
      ag::Tensor x = (ag::arange(0, 512).to(dtype) * (20.0 / 512) - 16.0).reshape({512, 1});
      std::vector<ag::Tensor> in{x, ag::ones({1, 1}, dtype), ag::testing::graph_inputs(g, 5)[2]};
      expect_cpp_matches_interpreter(g, in, {0, 0}, std::string(approximate) + " " + t);
      // The tail is there to compare: eager's gelu of -10 is a tiny negative, not 0.
      ag::Tensor y = ag::gelu(ag::full({}, -10.0, dtype), approximate);
      EXPECT_LT(y.item<double>(), 0.0) << approximate << " " << t;
    }
  }
}

TEST(CppBackend, LastDimReductionsFuseWithTheirProducers) {
  ag::graph::Graph g =
      ag::graph::parse_graph(R"(graph f(%x: f32[2,3,50], %m: b8[3,50], %y: f64[40,7]) {
  %s: f32[2,3,50] = aten.mul.Scalar(%x, 0.125)
  %f: f32[2,3,50] = aten.masked_fill.Scalar(%s, %m, -inf)
  %p: f32[2,3,50] = aten._softmax.default(%f, -1, false)
  %e: f32[2,3,50] = aten.exp.default(%x)
  %ls: f32[2,3,50] = aten._log_softmax.default(%e, 2, false)
  %sq: f32[2,3,50] = aten.mul.Tensor(%x, %x)
  %sum: f32[2,3,1] = aten.sum.dim_IntList(%sq, [-1], true)
  %mx: f32[2,3] = aten.amax.default(%x, [2])
  %t: f64[40,7] = aten.tanh.default(%y)
  %mean: f64[40] = aten.mean.dim(%t, [1])
  %sum0: f64[7] = aten.sum.dim_IntList(%t, [0])
  return (%p, %ls, %sum, %mx, %mean, %sum0, %sq)
})");
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  int fused = 0;
  for (const ag::backends::cpp::Kernel& k : s.kernels)
    fused += k.reduction != ag::backends::cpp::Reduction::none && !k.nodes.empty();
  EXPECT_EQ(fused, 4);  // softmax, log_softmax, sum, mean each with its producer; amax alone
  std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 4);
  in[1] = ag::testing::test_input({3, 50}, -1.0, 1.0, 9, false).gt(0.5);  // no row fully masked
  expect_cpp_matches_interpreter(g, in, ag::testing::kF32Tolerances);
}

TEST(CppBackend, ParallelKernelsOverLargeAndOddShapes) {
  expect_cpp_matches_interpreter(R"(graph f(%x: f32[3,70001], %y: f32[3,1], %z: f32[]) {
  %a: f32[3,70001] = aten.add.Tensor(%x, %y)
  %s: f32[3,70001] = aten.mul.Tensor(%a, %z)
  %e: f32[3,70001] = aten.sin.default(%s)
  %z2: f32[] = aten.mul.Tensor(%z, %z)
  return (%e, %z2)
})",
                                 ag::testing::kF32Tolerances);
}

TEST(CppBackend, AnInputWithAnotherLayoutThanTracedStillComputesTheSame) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f64[4,6], %y: f64[4,6]) {
  %a: f64[4,6] = aten.add.Tensor(%x, %y)
  %c: f64[4,6] = aten.cos.default(%a)
  return (%c)
})");
  ag::Tensor xt = ag::testing::test_input({6, 4}, -1.0, 1.0, 5, false).t();  // strides {1,4}
  ag::Tensor y = ag::testing::test_input({4, 6}, -1.0, 1.0, 6, false);
  expect_cpp_matches_interpreter(g, {xt, y});
}

// The backward of a sum starts with the tangent expanded to the input's shape: the kernels read
// the tangent with a zero stride instead of a step materializing the view, and a small 1-D full
// sum ends the forward kernel instead of an extern call (issue 13's per-call path).
TEST(CppBackend, FoldsExpandsIntoTheirUsersAndFusesASmallFullSum) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f64[8], %t: f64[]) {
  %e: f64[8]{0} = aten.expand.default(%t, size=[8])
  %m: f64[8] = aten.mul.Tensor(%x, %e)
  %c: f64[8] = aten.cos.default(%m)
  %s: f64[] = aten.sum.default(%c)
  return (%s, %m)
})");
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ASSERT_EQ(s.steps.size(), 1u);
  ASSERT_TRUE(s.steps[0].is_kernel);
  const ag::backends::cpp::Kernel& k = s.kernels[0];
  EXPECT_EQ(k.reduction, ag::backends::cpp::Reduction::sum);
  ASSERT_EQ(k.inputs.size(), 2u);
  EXPECT_EQ(k.inputs[1].value, 2u);      // %e, as the code names it
  EXPECT_EQ(k.inputs[1].read_from, 1u);  // %t's buffer
  expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 4));
}

// The source of a folded expand computed by a kernel of the same shape as its consumer, or of
// another shape, runs before the consumer reads it (the mean backward of a pooled head: a
// [2,4,1,1] division expanded over [2,4,4,4]).
TEST(CppBackend, AFoldedExpandsSourceKernelRunsBeforeItsReaders) {
  ag::graph::Graph g =
      ag::graph::parse_graph(R"(graph f(%g: f64[2,4,1,1], %r: f64[2,4,4,4], %y: f64[2,4,4,4]) {
  %d: f64[2,4,1,1] = aten.div.Scalar(%g, other=16)
  %e: f64[2,4,4,4]{4,1,0,0} = aten.expand.default(%d, size=[2, 4, 4, 4])
  %t: f64[2,4,4,4] = aten.threshold_backward.default(%e, %r, threshold=0)
  %n: f64[2,4,4,4] = aten.neg.default(%y)
  %e2: f64[2,4,4,4] = aten.expand.default(%n, size=[2, 4, 4, 4])
  %m: f64[2,4,4,4] = aten.mul.Tensor(%e2, %t)
  return (%m)
})");
  expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 6));
}

TEST(CppBackend, AnExpandAnExternAlsoReadsKeepsItsStep) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f64[4,8], %b: f64[8], %w: f64[8,3]) {
  %e: f64[4,8]{0,1} = aten.expand.default(%b, size=[4, 8])
  %m: f64[4,8] = aten.mul.Tensor(%x, %e)
  %p: f64[4,3] = aten.mm.default(%e, %w)
  return (%m, %p)
})");
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ASSERT_FALSE(s.steps.empty());
  EXPECT_FALSE(s.steps[0].is_kernel);  // the expand, as before
  expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 5));
}

TEST(CppBackend, AFoldedExpandRunsAgainWhenTheKernelFallsBack) {
  // Traced contiguous, called with a transposed %x: the kernel falls back to its nodes, and the
  // expand it had folded must run first.
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f64[4,6], %y: f64[4,6]) {
  %e: f64[4,6] = aten.expand.default(%x, size=[4, 6])
  %a: f64[4,6] = aten.add.Tensor(%e, %y)
  %c: f64[4,6] = aten.cos.default(%a)
  return (%c)
})");
  ag::Tensor xt = ag::testing::test_input({6, 4}, -1.0, 1.0, 5, false).t();
  ag::Tensor y = ag::testing::test_input({4, 6}, -1.0, 1.0, 6, false);
  expect_cpp_matches_interpreter(g, {xt, y});
}

TEST(CppBackend, AotgradDumpWritesTheGeneratedSource) {
  std::string dir = (std::filesystem::temp_directory_path() / "aotgrad_cpp_dump_XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  setenv("AOTGRAD_DUMP", dir.c_str(), 1);
  // Two graphs of one name, compiled outside aot_function: two files, neither overwritten.
  for (const char* op : {"cos", "sin"})
    ag::backends::compile_cpp(ag::graph::parse_graph(std::string(R"(graph dumped(%x: f64[3]) {
  %c: f64[3] = aten.)") + op + R"(.default(%x)
  return (%c)
})"));
  unsetenv("AOTGRAD_DUMP");
  std::string all;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("cpp_dumped_", 0) != 0 || name.find("_code.txt") == std::string::npos) continue;
    ++files;
    std::ifstream f(e.path());
    std::stringstream text;
    text << f.rdbuf();
    all += text.str();
  }
  EXPECT_EQ(files, 2);
  EXPECT_TRUE(ag::testing::contains(all, "std::cos(v0)")) << all;
  EXPECT_TRUE(ag::testing::contains(all, "std::sin(v0)")) << all;
  std::filesystem::remove_all(dir);
}

TEST(CppBackend, CompileErrorsNameTheKeptSource) {
  std::string err = ag::testing::error_of<std::runtime_error>(
      [] { ag::backends::cpp::load_shared_object("this is not C++;\n"); });
  EXPECT_TRUE(ag::testing::contains(err, "failed on generated code")) << err;
  EXPECT_TRUE(ag::testing::contains(err, "source kept at ")) << err;
  EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  // The kept directory is real (the user reads the source there); remove it, not to leave one
  // behind in the temp directory on every run.
  size_t at = err.find("source kept at ");
  std::filesystem::path kept = err.substr(at + std::string("source kept at ").size());
  EXPECT_TRUE(std::filesystem::exists(kept)) << kept;
  if (kept.parent_path().filename().string().rfind("aotgrad-cpp-", 0) == 0)
    std::filesystem::remove_all(kept.parent_path());
}

TEST(CppBackend, AMissingCompilerIsOneClearLine) {
  const char* old = std::getenv("AOTGRAD_CXX");
  std::string saved = old ? old : "";
  setenv("AOTGRAD_CXX", "/nonexistent/aotgrad-test-cxx", 1);
  std::string err = ag::testing::error_of<std::runtime_error>(
      [] { ag::backends::cpp::load_shared_object("int f() { return 1; }\n"); });
  if (old)
    setenv("AOTGRAD_CXX", saved.c_str(), 1);
  else
    unsetenv("AOTGRAD_CXX");
  EXPECT_TRUE(ag::testing::contains(err, "'/nonexistent/aotgrad-test-cxx' cannot be run")) << err;
}

TEST(CppBackend, GraphsWithoutFusableNodesNeedNoCompiler) {
  const char* old = std::getenv("AOTGRAD_CXX");
  std::string saved = old ? old : "";
  setenv("AOTGRAD_CXX", "/nonexistent/aotgrad-test-cxx", 1);
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f64[2,3], %w: f64[3,2]) {
  %mm: f64[2,2] = aten.mm.default(%x, %w)
  return (%mm)
})");
  EXPECT_NO_THROW(expect_cpp_matches_interpreter(g, ag::testing::graph_inputs(g, 1)));
  if (old)
    setenv("AOTGRAD_CXX", saved.c_str(), 1);
  else
    unsetenv("AOTGRAD_CXX");
}

// Extern calls share the interpreter's node preparation (backends/node_call.h), so a Tensor?[]
// with None entries (index, index_put) runs under cpp too; before, the None's marker was read
// as a value id.
TEST(CppBackend, OptionalTensorListsRunAsExternCalls) {
  ag::graph::Graph g = ag::graph::parse_graph(
      "graph g(%x: f32[2,3,4], %i: i64[2], %v: f32[4]) {\n"
      "  %index: f32[2,3] = aten.index.Tensor(%x, [%i, none, %i])\n"
      "  %e: f32[2,3] = aten.exp.default(%index)\n"
      "  %index_put: f32[2,3,4] = aten.index_put.default(%x, [none, %i], %v, true)\n"
      "  return (%e, %index_put)\n"
      "}\n");
  std::vector<ag::Tensor> inputs{ag::testing::iota({2, 3, 4}),
                                 ag::from_vector(std::vector<int64_t>{1, 0}, {2}),
                                 ag::testing::iota({4}, 10)};
  expect_cpp_matches_interpreter(g, inputs, {1e-6, 1e-6});  // exp: libmvec within a few ulp
}
