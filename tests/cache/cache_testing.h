// A fixture that gives each test an empty on-disk cache of its own: AOTGRAD_CACHE_DIR points at
// a fresh directory, AOTGRAD_CACHE and AOTGRAD_CACHE_SIZE_LIMIT are unset, and all three are put
// back afterwards. Tests using it must not change the environment from several threads.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad::testing {

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("aotgrad_cache_" + std::to_string(::getpid()) +
                                                     "_" + t->test_suite_name() + "_" + t->name());
    std::filesystem::remove_all(dir_);
    for (const char* name : kVars) {
      restore_at_teardown(name);
      ::unsetenv(name);
    }
    ::setenv("AOTGRAD_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second)
        ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else
        ::unsetenv(it->first.c_str());
    }
    ::unsetenv("AOTGRAD_LOG");
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    for (const std::filesystem::path& d : scratch_) std::filesystem::remove_all(d, ec);
  }

  // Environment variable `name` as it is now is put back at TearDown (for a test that sets it).
  void restore_at_teardown(const char* name) {
    const char* v = std::getenv(name);
    saved_.emplace_back(name, v ? std::optional<std::string>(v) : std::nullopt);
  }

  // A fresh, empty directory beside the cache's (DIR_suffix), removed at TearDown.
  std::filesystem::path scratch_dir(const std::string& suffix) {
    std::filesystem::path d = dir_.string() + "_" + suffix;
    std::filesystem::remove_all(d);
    std::filesystem::create_directories(d);
    scratch_.push_back(d);
    return d;
  }

  // The regular files under DIR/ns (the entries), sorted.
  std::vector<std::filesystem::path> entries(const std::string& ns) const {
    std::vector<std::filesystem::path> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / ns, ec))
      if (e.is_regular_file() && e.path().filename().string()[0] != '.') out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  static std::string read_file(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  static void write_file(const std::filesystem::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out << bytes;
  }

  std::filesystem::path dir_;

 private:
  static constexpr const char* kVars[] = {"AOTGRAD_CACHE_DIR", "AOTGRAD_CACHE",
                                          "AOTGRAD_CACHE_SIZE_LIMIT"};
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;  // name, old value
  std::vector<std::filesystem::path> scratch_;
};

// The bytes of a float tensor, for bit-for-bit comparisons.
inline std::vector<uint32_t> bits(const Tensor& t) {
  std::vector<float> v = t.contiguous().to_vector<float>();
  std::vector<uint32_t> out(v.size());
  std::memcpy(out.data(), v.data(), v.size() * sizeof(float));
  return out;
}

}  // namespace aotgrad::testing
