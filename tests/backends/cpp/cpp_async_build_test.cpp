// compile_cpp returns once a graph is scheduled and its source written; the C++ compiler runs on
// a thread of its own (cpp::start_shared_object) and the first call waits for it. A compiler
// failure is thrown by every call of the graph, a compiler that cannot be run by compile_cpp.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>

#include "backends/cpp/build.h"
#include "backends/cpp/cpp_test_util.h"
#include "cache/cache_testing.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;

namespace {

class CppAsyncBuildTest : public ag::testing::CacheTest {};

// A graph of one fused kernel that no other test compiles.
constexpr const char* kGraph = R"(graph async_kernel(%x: f64[3,4]) {
  %a: f64[3,4] = aten.mul.Scalar(%x, 0.4375)
  %e: f64[3,4] = aten.exp.default(%a)
  return (%e)
})";

}  // namespace

TEST_F(CppAsyncBuildTest, ACompilerFailureIsThrownByEveryCallNotByCompileCpp) {
  // A compiler that answers --version and fails on every source.
  const fs::path bin = scratch_dir("bin");
  const fs::path cc = bin / "failing-cc";
  write_file(cc,
             "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'failing-cc for " + bin.string() +
                 "'; exit 0; fi\necho 'kernels.cpp:1:1: error: this compiler always fails' >&2\n"
                 "exit 1\n");
  fs::permissions(cc, fs::perms::owner_all);
  restore_at_teardown("AOTGRAD_CXX");
  ::setenv("AOTGRAD_CXX", cc.c_str(), 1);
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  std::optional<ag::backends::CompiledGraph> run;
  ASSERT_NO_THROW(run = ag::backends::compile_cpp(g));
  for (int i = 0; i < 2; ++i) {
    const std::string err =
        ag::testing::error_of<std::runtime_error>([&] { (*run)(ag::testing::graph_inputs(g, 1)); });
    EXPECT_TRUE(ag::testing::contains(err, "failed on generated code")) << err;
    EXPECT_TRUE(ag::testing::contains(err, "this compiler always fails")) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    const size_t at = err.find("source kept at ");
    ASSERT_NE(at, std::string::npos) << err;
    const fs::path kept = err.substr(at + std::string("source kept at ").size());
    if (i == 0 && kept.parent_path().filename().string().rfind("aotgrad-cpp-", 0) == 0)
      fs::remove_all(kept.parent_path());
  }
  EXPECT_TRUE(entries("cpp").empty());
}

TEST_F(CppAsyncBuildTest, AGraphCalledBeforeItsBuildEndsWaitsForIt) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);  // returns while compiling
  const std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, 3);
  const std::vector<double> got = run(std::vector<ag::Tensor>(in))[0].to_vector<double>();
  const std::vector<double> want =
      ag::backends::compile_interpreter(g)(std::vector<ag::Tensor>(in))[0].to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * std::abs(want[i]));
  EXPECT_EQ(entries("cpp").size(), 1u);  // stored by the build thread
}
