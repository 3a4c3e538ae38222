// The memory planner: one liveness analysis for the interpreter and cpp, and generated kernels
// writing over an input that dies there, which lowers the peak of a chain below the sum of its
// intermediates while the results stay bit-identical to the interpreter's.
#include "backends/cpp/memory_plan.h"

#include <gtest/gtest.h>

#include "aotgrad/memory.h"
#include "backends/cpp/codegen.h"
#include "backends/cpp/cpp_test_util.h"
#include "backends/liveness.h"
#include "testing/values.h"

namespace ag = aotgrad;

namespace {

// mm (an extern call) feeding a fused pointwise kernel: two intermediates of 64 KiB each. No
// multiply-add, which the generated code may contract into an fma (not bit-identical to eager).
constexpr const char* kChain = R"(graph chain(%x: f32[128,128], %w: f32[128,128]) {
  %a: f32[128,128] = aten.mm.default(%x, %w)
  %m: f32[128,128] = aten.mul.Tensor(%a, %a)
  %p: f32[128,128] = aten.relu.default(%m)
  %r: f32[128,128] = aten.neg.default(%p)
  return (%r)
})";

// Bytes the call held above what was live before it, at its peak.
size_t peak_during(const ag::backends::CompiledGraph& fn, const std::vector<ag::Tensor>& inputs,
                   std::vector<ag::Tensor>& result) {
  ag::reset_peak_memory_stats();
  size_t before = ag::memory_stats().bytes_in_use;
  std::vector<ag::Tensor> in = inputs;
  result = fn(std::move(in));
  return ag::memory_stats().peak_bytes_in_use - before;
}

}  // namespace

TEST(Liveness, FreesEachValueAfterItsLastReaderAndNeverAnOutput) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f32[4], %unused: f32[4]) {
  %a: f32[4] = aten.neg.default(%x)
  %b: f32[4] = aten.exp.default(%a)
  %c: f32[4] = aten.add.Tensor(%a, %x)
  return (%c, %b)
})");
  std::vector<ag::backends::StepValues> steps;
  for (const ag::graph::Node& n : g.nodes())
    steps.push_back({ag::backends::node_reads(n), {n.outputs[0].index}});
  ag::backends::Liveness live = ag::backends::compute_liveness(g, steps);
  const uint32_t x = g.inputs()[0].index, unused = g.inputs()[1].index;
  EXPECT_EQ(live.free_at_start, (std::vector<uint32_t>{unused}));
  ASSERT_EQ(live.free_after.size(), 3u);
  EXPECT_TRUE(live.free_after[0].empty());
  EXPECT_TRUE(live.free_after[1].empty());  // %b is an output
  // %a dies at the add; %x is a caller's input, released through the slots, not listed here.
  EXPECT_EQ(live.free_after[2], (std::vector<uint32_t>{g.nodes()[0].outputs[0].index}));
  EXPECT_EQ(live.last_use[x], 2);
  EXPECT_EQ(live.last_use[g.nodes()[1].outputs[0].index], ag::backends::Liveness::kOutput);
}

TEST(CppMemoryPlan, AKernelTakesTheBufferOfTheExternResultItConsumes) {
  ag::graph::Graph g = ag::graph::parse_graph(kChain);
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ag::backends::cpp::plan_memory(g, s);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].reuse, (std::vector<int32_t>{0}));  // %r over %a

  std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 11);
  std::vector<ag::Tensor> got, want;
  peak_during(ag::backends::compile_cpp(g), inputs, got);  // warm: the build and first touches
  size_t planned = peak_during(ag::backends::compile_cpp(g), inputs, got);
  size_t intermediate = 128 * 128 * sizeof(float);
  // %a and %r (the fused %m, %p need none): one buffer at a time instead of both.
  EXPECT_LT(planned, 2 * intermediate);
  EXPECT_EQ(planned, intermediate);
  peak_during(ag::backends::compile_interpreter(g), inputs, want);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>());  // bit-identical
}

TEST(CppMemoryPlan, NeverWritesOverACallersInputOrAValueThatLeavesTheGraph) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph keep(%x: f32[8,8], %w: f32[8,8]) {
  %a: f32[8,8] = aten.mm.default(%x, %w)
  %n: f32[8,8] = aten.neg.default(%a)
  %e: f32[8,8] = aten.neg.default(%x)
  return (%n, %e, %a)
})");
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ag::backends::cpp::plan_memory(g, s);
  ASSERT_EQ(s.kernels.size(), 1u);
  EXPECT_EQ(s.kernels[0].reuse, (std::vector<int32_t>{-1, -1}));
  std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 5);
  std::vector<float> x_before = inputs[0].to_vector<float>();
  std::vector<ag::Tensor> out = ag::backends::compile_cpp(g)(std::vector<ag::Tensor>(inputs));
  EXPECT_EQ(inputs[0].to_vector<float>(), x_before);
  EXPECT_EQ(out[0].neg().to_vector<float>(), out[2].to_vector<float>());
}

TEST(CppMemoryPlan, AnInputStillHeldElsewhereIsNotWrittenOver) {
  // %v views %a, so %a's storage is shared when the kernel runs: the runner allocates.
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph view(%x: f32[8,8], %w: f32[8,8]) {
  %a: f32[8,8] = aten.mm.default(%x, %w)
  %v: f32[64] = aten.view.default(%a, [64])
  %n: f32[8,8] = aten.neg.default(%a)
  return (%n, %v)
})");
  std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 6);
  std::vector<ag::Tensor> out = ag::backends::compile_cpp(g)(std::vector<ag::Tensor>(inputs));
  EXPECT_EQ(out[0].neg().reshape({64}).to_vector<float>(), out[1].to_vector<float>());
}

TEST(CppMemoryPlan, AnInputReadAgainThroughAFoldedExpandLosesRestrictWhenItsBufferIsTaken) {
  // %e is an identity expand of %a, folded into the kernel (read from %a's buffer). %r takes
  // %a's buffer, so both input pointers alias the output: none of the three may be __restrict.
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph twice(%x: f32[8,8], %w: f32[8,8]) {
  %a: f32[8,8] = aten.mm.default(%x, %w)
  %e: f32[8,8] = aten.expand.default(%a, [8, 8])
  %r: f32[8,8] = aten.add.Tensor(%a, %e)
  return (%r)
})");
  ag::backends::cpp::Schedule s = ag::backends::cpp::schedule_graph(g);
  ag::backends::cpp::plan_memory(g, s);
  ASSERT_EQ(s.kernels.size(), 1u);
  const ag::backends::cpp::Kernel& k = s.kernels[0];
  ASSERT_EQ(k.inputs.size(), 2u);
  EXPECT_EQ(k.inputs[0].read_from, k.inputs[1].read_from);  // one buffer, read twice
  EXPECT_EQ(k.reuse, (std::vector<int32_t>{0}));
  const std::string code = ag::backends::cpp::generate_source(g, s);
  EXPECT_NE(code.find("const float* in0 = "), std::string::npos) << code;
  EXPECT_NE(code.find("const float* in1 = "), std::string::npos) << code;
  EXPECT_NE(code.find("float* out0 = "), std::string::npos) << code;
  EXPECT_EQ(code.find("__restrict"), std::string::npos) << code;

  std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 7);
  std::vector<ag::Tensor> got = ag::backends::compile_cpp(g)(std::vector<ag::Tensor>(inputs));
  std::vector<ag::Tensor> want =
      ag::backends::compile_interpreter(g)(std::vector<ag::Tensor>(inputs));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].to_vector<float>(), want[0].to_vector<float>());
}
