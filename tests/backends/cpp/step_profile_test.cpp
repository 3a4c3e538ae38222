// The step profile: while on, every step of a cpp-compiled call adds its time to the row of its
// description; products are told apart from the rest; off, nothing is recorded.
#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "backends/cpp/cpp_backend.h"
#include "backends/cpp/cpp_test_util.h"
#include "backends/cpp/step_profile.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace cpp = aotgrad::backends::cpp;

namespace {

constexpr const char* kGraph = R"(graph prof(%x: f32[16,8], %w: f32[8,12], %v: f32[16,12]) {
  %p: f32[16,12] = aten.mm.default(%x, %w)
  %r: f32[16,12] = aten.relu.default(%p)
  %e: f32[16,12] = aten.exp.default(%v)
  %s: f32[16,12] = aten.mul.Tensor(%r, %e)
  %t: f32[12,16] = aten.t.default(%s)
  return (%t)
})";

const cpp::StepTime* row(const std::vector<cpp::StepTime>& rows, const std::string& label) {
  auto it = std::find_if(rows.begin(), rows.end(),
                         [&](const cpp::StepTime& r) { return r.label == label; });
  return it == rows.end() ? nullptr : &*it;
}

}  // namespace

TEST(CppStepProfile, EveryStepOfEveryCallIsCountedUnderItsDescription) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);
  const std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 1);
  cpp::reset_step_profile();
  cpp::set_step_profiling(true);
  for (int i = 0; i < 3; ++i) run(std::vector<ag::Tensor>(inputs));
  cpp::set_step_profiling(false);
  run(std::vector<ag::Tensor>(inputs));  // not counted
  const std::vector<cpp::StepTime> rows = cpp::step_profile();
  ASSERT_EQ(rows.size(), 3u) << cpp::step_profile_table();
  const cpp::StepTime* gemm = row(rows, "prof: gemm aten.mm.default + relu [16, 12]");
  const cpp::StepTime* kernel = row(rows, "prof: kernel aten.exp.default aten.mul.Tensor [16, 12]");
  const cpp::StepTime* view = row(rows, "prof: extern aten.t.default [12, 16]");
  ASSERT_TRUE(gemm && kernel && view) << cpp::step_profile_table();
  EXPECT_TRUE(gemm->product);
  EXPECT_FALSE(kernel->product);
  EXPECT_FALSE(view->product);
  for (const cpp::StepTime* r : {gemm, kernel, view}) {
    EXPECT_EQ(r->calls, 3);
    EXPECT_GE(r->ms, 0.0);
  }
  const std::string table = cpp::step_profile_table();
  EXPECT_NE(table.find("matrix products and convolutions"), std::string::npos);
  cpp::reset_step_profile();
  EXPECT_TRUE(cpp::step_profile().empty());
}

TEST(ConcurrencyCppStepProfile, CallsFromSeveralThreadsAllCount) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);
  const std::vector<ag::Tensor> inputs = ag::testing::graph_inputs(g, 2);
  cpp::reset_step_profile();
  cpp::set_step_profiling(true);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) run(std::vector<ag::Tensor>(inputs));
    });
  for (std::thread& t : threads) t.join();
  cpp::set_step_profiling(false);
  const std::vector<cpp::StepTime> rows = cpp::step_profile();
  ASSERT_EQ(rows.size(), 3u);
  for (const cpp::StepTime& r : rows) EXPECT_EQ(r.calls, 40) << r.label;
  cpp::reset_step_profile();
}
