// `aotgrad run --load-ops LIB`: a graph that calls ops a shared library registers runs once the
// library is loaded (tests/custom/plugin/plugin_ops.cpp, a MODULE library), and without it fails
// naming the op.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/npy.h"
#include "testing/values.h"

namespace aotgrad::testing {
namespace {

namespace fs = std::filesystem;

class CliLoadOps : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aotgrad_load_ops_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "g.graph") << "graph forward(%x: f64[3]) {\n"
                                       "  %t: f64[3] = plugin.triple.default(%x)\n"
                                       "  %y: f64[3] = plugin.add_one.default(%t)\n"
                                       "  %s: f64[] = aten.sum.default(%y)\n"
                                       "  return (%s, %y)\n"
                                       "}\n";
    write_npy((dir_ / "x.npy").string(), f64({1, 2, -3}, {3}));
  }
  void TearDown() override { fs::remove_all(dir_); }

  int cli(const std::string& args) {
    std::string cmd = std::string(AOTGRAD_CLI_PATH) + " " + args + " >" +
                      (dir_ / "stdout").string() + " 2>" + (dir_ / "stderr").string();
    int r = std::system(cmd.c_str());
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
  }
  std::string err() const {
    std::ifstream in(dir_ / "stderr");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  std::string f(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

TEST_F(CliLoadOps, RunsRegisteredOpsForwardAndBackward) {
  ASSERT_EQ(cli("run " + f("g.graph") + " --load-ops " + AOTGRAD_TEST_OPS_LIB + " --inputs " +
                f("x.npy") + " --out " + f("out") + " --backward"),
            0)
      << err();
  EXPECT_EQ(read_npy(f("out/out1.npy")).to_vector<double>(), (std::vector<double>{4, 7, -8}));
  EXPECT_EQ(read_npy(f("out/out0.npy")).item<double>(), 3.0);
  // Both outputs get tangents of ones: d/dx = 3 (through the sum) + 3 (through %y).
  EXPECT_EQ(read_npy(f("out/grad0.npy")).to_vector<double>(), (std::vector<double>{6, 6, 6}));
}

TEST_F(CliLoadOps, WithoutTheLibraryTheOpIsUnknown) {
  EXPECT_EQ(cli("run " + f("g.graph") + " --inputs " + f("x.npy") + " --out " + f("out")), 1);
  EXPECT_TRUE(contains(err(), "unknown op 'plugin.triple.default'")) << err();
  EXPECT_EQ(cli("run " + f("g.graph") + " --load-ops " + f("missing.so") + " --inputs " +
                f("x.npy") + " --out " + f("out")),
            1);
  EXPECT_TRUE(contains(err(), "--load-ops " + f("missing.so") + ": cannot load the library"))
      << err();
}

}  // namespace
}  // namespace aotgrad::testing
