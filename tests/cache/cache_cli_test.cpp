// `aotgrad cache stats | clear`, and `aotgrad run` processes sharing one cache directory: two at
// once store the same artifact, a third hits it and writes the same bits.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include "cache_testing.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;

namespace {

class CacheCli : public ag::testing::CacheTest {
 protected:
  void SetUp() override {
    CacheTest::SetUp();
    work_ = scratch_dir("work");
    ag::manual_seed(3);
    std::vector<ag::Tensor> in = {ag::randn({4, 3}), ag::randn({3, 2}), ag::randn({2}),
                                  ag::from_vector(std::vector<int64_t>{3, 1, 0, 2}, {4})};
    for (size_t i = 0; i < in.size(); ++i)
      ag::write_npy((work_ / ("in" + std::to_string(i) + ".npy")).string(), in[i]);
  }

  // `aotgrad ARGS` through the shell, stdout and stderr into work_/NAME.out and NAME.err.
  std::string command(const std::string& args, const std::string& name) const {
    return std::string(AOTGRAD_CLI_PATH) + " " + args + " >" + (work_ / (name + ".out")).string() +
           " 2>" + (work_ / (name + ".err")).string();
  }
  int shell(const std::string& cmd) const {
    int r = std::system(cmd.c_str());
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
  }
  std::string run_mlp(const std::string& name) const {
    std::string args = "run " + std::string(AOTGRAD_TEST_DATA) + "/cli/mlp.graph --inputs";
    for (int i = 0; i < 4; ++i)
      args += " " + (work_ / ("in" + std::to_string(i) + ".npy")).string();
    return command(args + " --backward --out " + (work_ / name).string(), name);
  }
  std::string text(const std::string& name) const { return read_file(work_ / name); }

  fs::path work_;
};

}  // namespace

TEST_F(CacheCli, TwoProcessesStoreOneEntryAndAThirdHitsIt) {
  ASSERT_EQ(shell("(" + run_mlp("a") + ") & (" + run_mlp("b") + ") & wait"), 0);
  EXPECT_EQ(entries("artifacts").size(), 1u);
  ::setenv("AOTGRAD_LOG", "cache", 1);
  ASSERT_EQ(shell(run_mlp("c")), 0) << text("c.err");
  EXPECT_NE(text("c.err").find("event=disk_hit"), std::string::npos) << text("c.err");
  for (const char* f : {"out0.npy", "out1.npy", "grad0.npy", "grad1.npy", "grad2.npy"}) {
    SCOPED_TRACE(f);
    std::string a = read_file(work_ / "a" / f);
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(read_file(work_ / "b" / f), a);
    EXPECT_EQ(read_file(work_ / "c" / f), a);
  }
}

TEST_F(CacheCli, StatsAndClear) {
  // On the interpreter whatever AOTGRAD_COMPILER says: the counts below are one artifact and no
  // compiled code.
  ASSERT_EQ(shell("AOTGRAD_COMPILER=interpreter " + run_mlp("a")), 0) << text("a.err");
  uint64_t bytes = fs::file_size(entries("artifacts").at(0));
  ::setenv("AOTGRAD_CACHE_SIZE_LIMIT", "64M", 1);
  ASSERT_EQ(shell(command("cache stats", "stats")), 0) << text("stats.err");
  std::string b = std::to_string(bytes), out = text("stats.out");
  EXPECT_EQ(out.rfind("directory: " + dir_.string() + "\nlimit: 67108864 bytes (64.0 MiB)\n", 0),
            0u)
      << out;
  for (std::string line :
       {"\nartifacts: 1 entries, " + b + " bytes (",
        std::string("\ncpp: 0 entries, 0 bytes (0 B)\n"), "\ntotal: 1 entries, " + b + " bytes ("})
    EXPECT_NE(out.find(line), std::string::npos) << line << " in\n" << out;
  ASSERT_EQ(shell(command("cache clear", "clear")), 0) << text("clear.err");
  EXPECT_EQ(text("clear.out"), "removed 1 entries from " + dir_.string() + "\n");
  EXPECT_TRUE(entries("artifacts").empty());
  ASSERT_EQ(shell(command("cache stats", "stats")), 0);
  EXPECT_NE(text("stats.out").find("total: 0 entries, 0 bytes (0 B)\n"), std::string::npos)
      << text("stats.out");
  ::setenv("AOTGRAD_CACHE", "0", 1);
  ASSERT_EQ(shell(command("cache stats", "off")), 0);
  EXPECT_EQ(text("off.out"), "cache: off (AOTGRAD_CACHE=0)\n");
  EXPECT_EQ(shell(command("cache", "bad")), 2);
  EXPECT_EQ(text("bad.err"),
            "aotgrad: cache takes stats or clear, got nothing (aotgrad cache --help shows the "
            "usage)\n");
  EXPECT_EQ(shell(command("cache stats extra", "bad")), 2);
  EXPECT_NE(text("bad.err").find("an extra argument \"extra\""), std::string::npos);
}
