// The cpp backend from several threads (the ThreadSanitizer preset runs suites named
// Concurrency*): one compiled graph called from four threads at once, and four threads compiling
// the same graph into an empty build directory at once (each must load a whole object).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "backends/cpp/cpp_test_util.h"

namespace {

namespace ag = aotgrad;

const char* kGraph = R"(graph f(%x: f64[4,8], %w: f64[8,3], %b: f64[3]) {
  %mm: f64[4,3] = aten.mm.default(%x, %w)
  %a: f64[4,3] = aten.add.Tensor(%mm, %b)
  %t: f64[4,3] = aten.tanh.default(%a)
  %s: f64[4] = aten.sum.dim_IntList(%t, [1])
  return (%s, %t)
})";

std::vector<double> flat(const std::vector<ag::Tensor>& ts) {
  std::vector<double> out;
  for (const ag::Tensor& t : ts)
    for (double v : t.to_vector<double>()) out.push_back(v);
  return out;
}

template <typename F>
void on_four_threads(F f) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) threads.emplace_back(f, t);
  for (std::thread& th : threads) th.join();
}

TEST(ConcurrencyCppBackend, OneCallableFromFourThreads) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);
  auto inputs = [&](int t, int i) { return ag::testing::graph_inputs(g, 100 * t + i); };
  std::vector<std::vector<std::vector<double>>> got(4);
  on_four_threads([&](int t) {
    for (int i = 0; i < 50; ++i) got[t].push_back(flat(run(inputs(t, i))));
  });
  ag::backends::CompiledGraph ref = ag::backends::compile_interpreter(g);
  for (int t = 0; t < 4; ++t)
    for (int i = 0; i < 50; ++i) {
      std::vector<double> want = flat(ref(inputs(t, i)));
      ASSERT_EQ(got[t][i].size(), want.size());
      for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[t][i][k], want[k], 1e-12);
    }
}

// The graph's build runs on a thread of its own (no cache, so the compiler runs); four threads
// call it before it ends, and each waits for the one build and runs the same kernels.
TEST(ConcurrencyCppBackend, FourThreadsCallAGraphWhoseBuildHasNotEnded) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph first_calls(%x: f64[4,8]) {
  %a: f64[4,8] = aten.mul.Scalar(%x, 0.8125)
  %t: f64[4,8] = aten.tanh.default(%a)
  return (%t)
})");
  const char* old = std::getenv("AOTGRAD_CACHE");
  std::string saved = old ? old : "";
  setenv("AOTGRAD_CACHE", "0", 1);
  ag::backends::CompiledGraph run = ag::backends::compile_cpp(g);
  if (old)
    setenv("AOTGRAD_CACHE", saved.c_str(), 1);
  else
    unsetenv("AOTGRAD_CACHE");
  std::vector<std::vector<double>> got(4);
  on_four_threads([&](int t) { got[t] = flat(run(ag::testing::graph_inputs(g, 7 + t))); });
  ag::backends::CompiledGraph ref = ag::backends::compile_interpreter(g);
  for (int t = 0; t < 4; ++t) {
    std::vector<double> want = flat(ref(ag::testing::graph_inputs(g, 7 + t)));
    ASSERT_EQ(got[t].size(), want.size());
    for (size_t k = 0; k < want.size(); ++k) EXPECT_NEAR(got[t][k], want[k], 1e-12);
  }
}

TEST(ConcurrencyCppBackend, FourThreadsBuildTheSameGraphIntoAnEmptyDirectory) {
  std::string dir = (std::filesystem::temp_directory_path() / "aotgrad_cpp_race_XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const char* old = std::getenv("AOTGRAD_CACHE_DIR");
  std::string saved = old ? old : "";
  setenv("AOTGRAD_CACHE_DIR", dir.c_str(), 1);
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  std::vector<std::vector<double>> got(4);
  on_four_threads(
      [&](int t) { got[t] = flat(ag::backends::compile_cpp(g)(ag::testing::graph_inputs(g, 5))); });
  if (old)
    setenv("AOTGRAD_CACHE_DIR", saved.c_str(), 1);
  else
    unsetenv("AOTGRAD_CACHE_DIR");
  for (int t = 1; t < 4; ++t) EXPECT_EQ(got[t], got[0]);
  size_t objects = 0, leftovers = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(dir) / "cpp")) {
    std::string name = e.path().filename().string();
    objects += name[0] != '.';              // entries of the disk cache (cache/disk_cache.h)
    leftovers += name.starts_with(".tmp");  // its temporary files
  }
  EXPECT_EQ(objects, 1u);
  EXPECT_EQ(leftovers, 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
