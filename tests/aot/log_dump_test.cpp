// AOTGRAD_LOG and AOTGRAD_DUMP (aot/log.h): each topic logs one structured line per event
// ("[aotgrad] TOPIC fn=NAME key=value ..."); AOTGRAD_DUMP creates its directory and writes every
// graph of every compile there; a GraphProgram compiles once per distinct options, however often
// it runs (one cache compile event).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;
using ag::Tensor;

namespace {

// Sets an environment variable for one scope (the tests of this binary run on one thread).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() { ::unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

Tensor leaf(const ag::IntList& sizes, uint64_t seed) {
  return ag::testing::test_input(sizes, -1.0, 1.0, seed, true);
}

fs::path fresh_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("aotgrad_log_dump_test_" + name);
  fs::remove_all(p);
  return p;
}

}  // namespace

TEST(AotDump, CreatesItsDirectoryAndWritesEveryGraph) {
  fs::path dir = fresh_dir("dump") / "nested" / "deeper";
  ScopedEnv dump("AOTGRAD_DUMP", dir.string());
  ag::AotConfig config;
  config.name = "dumped";
  auto f = ag::aot_function([](const Tensor& x) { return x.sin().sum(); }, config);
  f(leaf({3}, 1));
  for (const char* stage : {"joint", "forward", "backward", "meta"}) {
    fs::path file = dir / (std::string("dumped_0_") + stage + ".txt");
    ASSERT_TRUE(fs::exists(file)) << file;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    if (std::string(stage) == "forward") {
      EXPECT_EQ(text.str(), f.graphs().forward);
    }
    if (std::string(stage) == "backward") {
      EXPECT_EQ(text.str(), f.graphs().backward);
    }
  }
  fs::remove_all(fresh_dir("dump"));
}

TEST(AotDump, ADirectoryThatCannotBeMadeIsOneErrorLine) {
  fs::path file = fresh_dir("not_a_dir");
  std::ofstream(file.string()) << "a file";
  ScopedEnv dump("AOTGRAD_DUMP", (file / "sub").string());
  auto f = ag::aot_function([](const Tensor& x) { return x.exp(); });
  ::testing::internal::CaptureStderr();
  Tensor y = f(leaf({2}, 2));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(ag::testing::allclose(y, leaf({2}, 2).exp(), 0.0, 0.0));
  std::vector<std::string> lines = lines_starting(err, "[aotgrad] AOTGRAD_DUMP: cannot create");
  EXPECT_FALSE(lines.empty()) << err;
  fs::remove_all(file);
}

TEST(AotLog, EachTopicWritesOneStructuredLinePerEvent) {
  ScopedEnv log("AOTGRAD_LOG", "guards,partition,cache,recompiles");
  ag::AotConfig config;
  config.name = "logged";
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) { return (x * w).sum(); }, config);
  ::testing::internal::CaptureStderr();
  f(leaf({3}, 1), leaf({3}, 2));
  f(leaf({3}, 1), leaf({3}, 2));
  f(leaf({4}, 1), leaf({4}, 2));
  std::string err = ::testing::internal::GetCapturedStderr();
  std::vector<std::string> guards = lines_starting(err, "[aotgrad] guards fn=logged index=");
  ASSERT_EQ(guards.size(), 2u) << err;
  EXPECT_NE(guards[0].find("inputs=[f64[3] strides=[1] offset=any requires_grad leaf; "),
            std::string::npos)
      << guards[0];
  std::vector<std::string> partition = lines_starting(err, "[aotgrad] partition fn=logged");
  ASSERT_EQ(partition.size(), 2u) << err;
  EXPECT_NE(partition[0].find(" partitioner=default "), std::string::npos) << partition[0];
  EXPECT_NE(partition[0].find(" saved=2 "), std::string::npos) << partition[0];
  EXPECT_EQ(lines_starting(err, "[aotgrad] cache fn=logged event=miss").size(), 2u) << err;
  EXPECT_EQ(lines_starting(err, "[aotgrad] cache fn=logged event=compile").size(), 2u) << err;
  EXPECT_EQ(lines_starting(err, "[aotgrad] cache fn=logged event=hit").size(), 1u) << err;
  std::vector<std::string> recompiles = lines_starting(err, "[aotgrad] recompiles fn=logged");
  ASSERT_EQ(recompiles.size(), 1u) << err;
  EXPECT_NE(recompiles[0].find("input 0 was f64[3]"), std::string::npos) << recompiles[0];
  EXPECT_TRUE(lines_starting(err, "[aotgrad] graphs").empty()) << "graphs was not asked for";
}

TEST(AotLog, GraphsTopicLogsEachGraphAsItIsMade) {
  ScopedEnv log("AOTGRAD_LOG", "graphs");
  ag::AotConfig config;
  config.name = "shown";
  auto f = ag::aot_function([](const Tensor& x) { return x.cos().sum(); }, config);
  ::testing::internal::CaptureStderr();
  f(leaf({3}, 1));
  std::string err = ::testing::internal::GetCapturedStderr();
  std::vector<std::string> lines = lines_starting(err, "[aotgrad] graphs fn=shown index=0 graph=");
  ASSERT_EQ(lines.size(), 3u) << err;
  EXPECT_EQ(lines[0].rfind("[aotgrad] graphs fn=shown index=0 graph=joint nodes=", 0), 0u);
  EXPECT_NE(err.find(f.graphs().backward), std::string::npos) << err;
}

TEST(GraphProgramCache, CompilesOncePerOptionsHoweverOftenItRuns) {
  ag::GraphProgram prog = ag::GraphProgram::parse(
      "graph f(%x: f64[3]) {\n  %y: f64[3] = aten.sin.default(%x)\n  return (%y)\n}\n", "g.txt");
  ScopedEnv log("AOTGRAD_LOG", "cache");
  ::testing::internal::CaptureStderr();
  ag::GraphRunOptions backward;
  backward.backward = true;
  Tensor x = leaf({3}, 4).detach();
  std::vector<Tensor> grads;
  for (int i = 0; i < 3; ++i) {
    prog.run({x}, {});
    grads = prog.run({x}, backward).grads;
  }
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(lines_starting(err, "[aotgrad] cache fn=g.txt event=compile").size(), 2u) << err;
  ASSERT_EQ(grads.size(), 1u);
  EXPECT_TRUE(ag::testing::allclose(grads[0], x.cos(), 1e-15, 0.0));
}
