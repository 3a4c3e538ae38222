// The C++ compiler's version (part of the cpp backend's cache key) is asked once per compiler file
// and then remembered in the disk cache (namespace "toolchain"), so that a new process whose
// kernels are all cached starts no process. A compiler replaced in place is asked again. Each test
// stands a shell script in for the compiler; it counts its runs in a file beside it.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "backends/cpp/build.h"
#include "cache/cache_testing.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;

namespace {

class CompilerVersionTest : public ag::testing::CacheTest {
 protected:
  void SetUp() override {
    CacheTest::SetUp();
    bin_ = scratch_dir("bin");
    restore_at_teardown("PATH");
  }

  // A script at bin_/sub/name that prints `first_line`, a second line, and exits with `status`;
  // every run appends a line to bin_/runs.
  fs::path fake_compiler(const std::string& first_line, int status = 0,
                         const std::string& name = "fakecc", const std::string& sub = "a") {
    fs::create_directories(bin_ / sub);
    const fs::path script = bin_ / sub / name;
    write_file(script, "#!/bin/sh\necho run >> '" + (bin_ / "runs").string() + "'\necho '" +
                           first_line + "'\necho 'a second line'\nexit " + std::to_string(status) +
                           "\n");
    fs::permissions(script, fs::perms::owner_all);
    return script;
  }

  int runs() const {
    const std::string log = read_file(bin_ / "runs");
    return static_cast<int>(std::count(log.begin(), log.end(), '\n'));
  }

  fs::path bin_;
};

}  // namespace

TEST_F(CompilerVersionTest, AskedOncePerCompilerFileThenReadFromTheCache) {
  const fs::path cc = fake_compiler("fakecc 1.0 (test)");
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0 (test)");
  EXPECT_EQ(runs(), 1);
  EXPECT_EQ(entries("toolchain").size(), 1u);
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0 (test)");
  EXPECT_EQ(runs(), 1);  // remembered, not asked
}

TEST_F(CompilerVersionTest, ACompilerReplacedInPlaceIsAskedAgain) {
  const fs::path cc = fake_compiler("fakecc 1.0");
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0");
  fake_compiler("fakecc 2.0");  // the same size, rewritten: a new modification time
  fs::last_write_time(cc, fs::last_write_time(cc) + std::chrono::seconds(5));
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 2.0");
  EXPECT_EQ(runs(), 2);
  fake_compiler("fakecc 3.0.1");  // another size
  fs::last_write_time(cc, fs::last_write_time(cc) - std::chrono::seconds(60));
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 3.0.1");
  EXPECT_EQ(runs(), 3);
}

TEST_F(CompilerVersionTest, ANameIsFoundThroughPathAndThroughLinksAsTheShellFindsIt) {
  const fs::path real = fake_compiler("fakecc 1.0", 0, "fakecc", "a");
  fs::create_directories(bin_ / "links");
  fs::create_symlink(real, bin_ / "links" / "cc-link");
  ::setenv("PATH", (bin_ / "links").c_str(), 1);
  EXPECT_EQ(ag::backends::cpp::compiler_version("cc-link"), "fakecc 1.0");
  EXPECT_EQ(ag::backends::cpp::compiler_version("cc-link"), "fakecc 1.0");
  EXPECT_EQ(runs(), 1);
  // The link retargeted to another compiler: asked again.
  const fs::path other = fake_compiler("othercc 9", 0, "othercc", "b");
  fs::remove(bin_ / "links" / "cc-link");
  fs::create_symlink(other, bin_ / "links" / "cc-link");
  EXPECT_EQ(ag::backends::cpp::compiler_version("cc-link"), "othercc 9");
  EXPECT_EQ(runs(), 2);
  // A directory earlier in $PATH with a compiler of that name shadows the first, as in the shell.
  fake_compiler("early 5", 0, "cc-link", "early");
  ::setenv("PATH", ((bin_ / "early").string() + ":" + (bin_ / "links").string()).c_str(), 1);
  EXPECT_EQ(ag::backends::cpp::compiler_version("cc-link"), "early 5");
  EXPECT_EQ(runs(), 3);
}

TEST_F(CompilerVersionTest, ACorruptEntryIsNeverReadAndTheCompilerIsAskedAgain) {
  const fs::path cc = fake_compiler("fakecc 1.0");
  ag::backends::cpp::compiler_version(cc.string());
  const std::vector<fs::path> e = entries("toolchain");
  ASSERT_EQ(e.size(), 1u);
  std::string bytes = read_file(e[0]);
  bytes[0] ^= 0x20;  // "fakecc" -> "Fakecc", the checksum no longer matches
  write_file(e[0], bytes);
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0");
  EXPECT_EQ(runs(), 2);
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0");
  EXPECT_EQ(runs(), 2);  // stored again
}

TEST_F(CompilerVersionTest, WithTheCacheOffTheCompilerIsAskedEachTime) {
  ::setenv("AOTGRAD_CACHE", "0", 1);
  const fs::path cc = fake_compiler("fakecc 1.0");
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0");
  EXPECT_EQ(ag::backends::cpp::compiler_version(cc.string()), "fakecc 1.0");
  EXPECT_EQ(runs(), 2);
  EXPECT_TRUE(entries("toolchain").empty());
}

TEST_F(CompilerVersionTest, ACompilerThatFailsOrIsMissingIsOneLineNamingItAndIsNotRemembered) {
  const fs::path cc = fake_compiler("broken 1.0", 3);
  for (int i = 0; i < 2; ++i) {
    try {
      ag::backends::cpp::compiler_version(cc.string());
      FAIL() << "a compiler exiting with 3 was taken as working";
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(cc.string()), std::string::npos) << what;
      EXPECT_NE(what.find("AOTGRAD_CXX"), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
  EXPECT_EQ(runs(), 2);
  EXPECT_TRUE(entries("toolchain").empty());
  EXPECT_THROW(ag::backends::cpp::compiler_version((bin_ / "no-such-compiler").string()),
               std::runtime_error);
  ::setenv("PATH", bin_.c_str(), 1);
  EXPECT_THROW(ag::backends::cpp::compiler_version("no-such-compiler"), std::runtime_error);
}
