// compile_cpp returns once a graph is scheduled and its source written; the C++ compiler runs on
// a thread of its own (cpp::start_shared_object) and the first call waits for it. A compiler
// failure is thrown by every call of the graph, a compiler that cannot be run by compile_cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "backends/cpp/build.h"
#include "backends/cpp/cpp_test_util.h"
#include "cache/cache_testing.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;

namespace {

class CppAsyncBuildTest : public ag::testing::CacheTest {
 protected:
  // Writes a compiler script `name` into `bin` that answers --version with a line naming `bin`
  // (not `name`, which may hold a quote) and runs `body` for a source, and makes it AOTGRAD_CXX for
  // this test.
  void use_fake_compiler(const fs::path& bin, const std::string& name, const std::string& body) {
    const fs::path cc = bin / name;
    write_file(cc, "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'fake cc for " + bin.string() +
                       "'; exit 0; fi\n" + body);
    fs::permissions(cc, fs::perms::owner_all);
    restore_at_teardown("AOTGRAD_CXX");
    ::setenv("AOTGRAD_CXX", cc.c_str(), 1);
  }
};

// `run`'s result for `g` on inputs of `seed` is the interpreter's, to rounding.
void expect_matches_interpreter(const ag::backends::CompiledGraph& run, const ag::graph::Graph& g,
                                uint64_t seed) {
  const std::vector<ag::Tensor> in = ag::testing::graph_inputs(g, seed);
  const std::vector<double> got = run(std::vector<ag::Tensor>(in))[0].to_vector<double>();
  const std::vector<double> want =
      ag::backends::compile_interpreter(g)(std::vector<ag::Tensor>(in))[0].to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12 * std::abs(want[i]));
}

// The source path a compile error names ("source kept at PATH", at the end).
fs::path kept_source(const std::string& err) {
  const size_t at = err.find("source kept at ");
  return at == std::string::npos ? fs::path() : fs::path(err.substr(at + 15));
}

// A graph of one fused kernel that no other test compiles.
constexpr const char* kGraph = R"(graph async_kernel(%x: f64[3,4]) {
  %a: f64[3,4] = aten.mul.Scalar(%x, 0.4375)
  %e: f64[3,4] = aten.exp.default(%a)
  return (%e)
})";

}  // namespace

TEST_F(CppAsyncBuildTest, ACompilerFailureIsThrownByEveryCallNotByCompileCpp) {
  // A compiler that answers --version and fails on every source.
  use_fake_compiler(scratch_dir("bin"), "failing-cc",
                    "echo 'kernels.cpp:1:1: error: this compiler always fails' >&2\nexit 1\n");
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  std::optional<ag::backends::CompiledGraph> run;
  ASSERT_NO_THROW(run = ag::backends::compile_cpp(g));
  for (int i = 0; i < 2; ++i) {
    const std::string err =
        ag::testing::error_of<std::runtime_error>([&] { (*run)(ag::testing::graph_inputs(g, 1)); });
    EXPECT_TRUE(ag::testing::contains(err, "failed on generated code")) << err;
    EXPECT_TRUE(ag::testing::contains(err, "this compiler always fails")) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    const fs::path kept = kept_source(err);
    ASSERT_FALSE(kept.empty()) << err;
    if (i == 0 && kept.parent_path().filename().string().rfind("aotgrad-cpp-", 0) == 0)
      fs::remove_all(kept.parent_path());
  }
  EXPECT_TRUE(entries("cpp").empty());
}

TEST_F(CppAsyncBuildTest, AGraphCalledBeforeItsBuildEndsWaitsForIt) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);  // returns while compiling
  expect_matches_interpreter(run, g, 3);
  EXPECT_EQ(entries("cpp").size(), 1u);  // stored by the build thread
}

TEST_F(CppAsyncBuildTest, TheCompilerRunsWithoutAShellAndLeavesThisProcessesSignalsAlone) {
  // std::system ignored SIGINT and SIGQUIT in the whole process while the compiler ran; the
  // compiler now runs beside the caller's program, which must stay interruptible. The compiler
  // below waits for a file before compiling, so the test looks while it runs. Its name has a
  // space and a quote: no shell reads it.
  const fs::path bin = scratch_dir("bin");
  const fs::path go = bin / "go", started = bin / "started";
  use_fake_compiler(bin, "it's a cc",
                    ": > '" + started.string() + "'\ni=0\nwhile [ ! -e '" + go.string() +
                        "' ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done\n"
                        "exec c++ \"$@\"\n");
  struct sigaction before_int {
  }, before_quit{};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &before_int), 0);
  ASSERT_EQ(::sigaction(SIGQUIT, nullptr, &before_quit), 0);
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph waiting_kernel(%x: f64[5]) {
  %a: f64[5] = aten.mul.Scalar(%x, 0.8125)
  %e: f64[5] = aten.sin.default(%a)
  return (%e)
})");
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);
  for (int i = 0; i < 400 && !fs::exists(started); ++i)  // the compiler's process is running
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(started));
  struct sigaction during_int {
  }, during_quit{};
  ASSERT_EQ(::sigaction(SIGINT, nullptr, &during_int), 0);
  ASSERT_EQ(::sigaction(SIGQUIT, nullptr, &during_quit), 0);
  write_file(go, "");
  EXPECT_EQ(during_int.sa_handler, before_int.sa_handler);
  EXPECT_EQ(during_quit.sa_handler, before_quit.sa_handler);
  EXPECT_NE(during_int.sa_handler, SIG_IGN);
  expect_matches_interpreter(run, g, 4);
  EXPECT_EQ(entries("cpp").size(), 1u);
}

TEST_F(CppAsyncBuildTest, ACompilerPastItsTimeLimitIsStoppedAndEveryCallSaysSo) {
  // A compiler that never finishes: the build gives up after AOTGRAD_CXX_TIMEOUT seconds and
  // kills it, rather than leaving the graph's first call waiting for ever.
  const fs::path bin = scratch_dir("bin");
  const fs::path pid_file = bin / "pid";
  use_fake_compiler(bin, "hanging-cc", "echo $$ > '" + pid_file.string() + "'\nexec sleep 1000\n");
  restore_at_teardown("AOTGRAD_CXX_TIMEOUT");
  ::setenv("AOTGRAD_CXX_TIMEOUT", "1", 1);
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph hanging_kernel(%x: f64[6]) {
  %a: f64[6] = aten.mul.Scalar(%x, 0.6875)
  %e: f64[6] = aten.cos.default(%a)
  return (%e)
})");
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);
  for (int i = 0; i < 2; ++i) {
    const std::string err =
        ag::testing::error_of<std::runtime_error>([&] { run(ag::testing::graph_inputs(g, 1)); });
    EXPECT_TRUE(ag::testing::contains(err, "still compiling after 1 s")) << err;
    EXPECT_TRUE(ag::testing::contains(err, "AOTGRAD_CXX_TIMEOUT")) << err;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
    const fs::path kept = kept_source(err);
    ASSERT_FALSE(kept.empty()) << err;
    if (i == 0) {  // each call throws the same message
      EXPECT_TRUE(fs::exists(kept)) << kept;
      if (kept.parent_path().filename().string().rfind("aotgrad-cpp-", 0) == 0)
        fs::remove_all(kept.parent_path());
    }
  }
  std::ifstream in(pid_file);
  pid_t pid = 0;
  ASSERT_TRUE(in >> pid);
  EXPECT_EQ(::kill(pid, 0), -1);  // the compiler's process is gone (killed and reaped)
  EXPECT_EQ(errno, ESRCH);
  EXPECT_TRUE(entries("cpp").empty());
}

TEST_F(CppAsyncBuildTest, ATimeLimitThatIsNotWholeSecondsIsOneLineNamingIt) {
  restore_at_teardown("AOTGRAD_CXX_TIMEOUT");
  int n = 0;
  for (const char* bad : {"0", "-3", "1.5", "ten", "99999999999", " 5"}) {
    ::setenv("AOTGRAD_CXX_TIMEOUT", bad, 1);
    // A graph of its own each time: a loaded or cached object would need no compiler.
    ag::graph::Graph g = ag::graph::parse_graph(
        "graph limit_kernel(%x: f64[3]) {\n"
        "  %a: f64[3] = aten.mul.Scalar(%x, " +
        std::to_string(1.25 + n++) + ")\n  return (%a)\n}");
    const std::string err =
        ag::testing::error_of<std::runtime_error>([&] { ag::backends::compile_cpp(g); });
    EXPECT_TRUE(ag::testing::contains(err, "AOTGRAD_CXX_TIMEOUT must be a whole number")) << bad;
    EXPECT_EQ(err.find('\n'), std::string::npos) << err;
  }
}
