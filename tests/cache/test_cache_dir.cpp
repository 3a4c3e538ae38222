// Points the on-disk cache of the whole test process, and of the programs it starts (the aotgrad
// CLI), at a fresh temporary directory before any test runs, so the suite never reads or fills a
// user's cache (docs/caching.md). Tests that need a cache of their own use CacheTest
// (cache_testing.h), which swaps the directory for the test's duration.
//
// AOTGRAD_TEST_CACHE_DIR names a directory to use instead, shared by every test process that is
// given it: scripts/test gives one scratch directory to the test processes of all its stages, so
// a graph that another test already compiled (the same kernels, the same lowered artifact) is a
// cache hit rather than one more run of the C++ compiler per test process.
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace {

class TestCacheDir {
 public:
  TestCacheDir() {
    if (const char* shared = ::getenv("AOTGRAD_TEST_CACHE_DIR"); shared && *shared) {
      ::setenv("AOTGRAD_CACHE_DIR", shared, 1);  // the caller's: left in place at exit
      return;
    }
    std::error_code ec;
    std::string tmpl = (std::filesystem::temp_directory_path(ec) / "aotgrad_test_cache_XXXXXX");
    if (char* d = ::mkdtemp(tmpl.data())) {
      dir_ = d;
      ::setenv("AOTGRAD_CACHE_DIR", d, 1);
    } else {
      ::setenv("AOTGRAD_CACHE", "0", 1);  // no temporary directory: no cache, never the user's
    }
  }
  ~TestCacheDir() {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  TestCacheDir(const TestCacheDir&) = delete;
  TestCacheDir& operator=(const TestCacheDir&) = delete;

 private:
  std::string dir_;
};

// Set once, before main; read only afterwards.
const TestCacheDir kTestCacheDir;

}  // namespace
