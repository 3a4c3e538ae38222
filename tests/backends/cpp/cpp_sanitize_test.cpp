// Generated code runs under the sanitizers of the process that loads it: in the asan preset an
// out-of-bounds store inside a compiled kernel is reported (and stops the process) like one in
// the library; in other builds the flags carry no sanitizer unless AOTGRAD_CPP_SANITIZE=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "backends/cpp/build.h"

namespace cpp = aotgrad::backends::cpp;

TEST(CppSanitize, FlagsFollowTheBuildAndTheEnvironment) {
  [[maybe_unused]] const bool asked = std::getenv("AOTGRAD_CPP_SANITIZE") &&
                                      std::string_view(std::getenv("AOTGRAD_CPP_SANITIZE")) == "1";
#if defined(__SANITIZE_ADDRESS__)
  const bool expected = true;
#else
  const bool expected = asked;
#endif
  EXPECT_EQ(cpp::compile_flags().find("-fsanitize=address,undefined") != std::string::npos,
            expected)
      << cpp::compile_flags();
}

#if defined(__SANITIZE_ADDRESS__)
TEST(CppSanitizeDeathTest, AnOutOfBoundsStoreInAGeneratedKernelIsReported) {
  std::shared_ptr<const cpp::SharedObject> so = cpp::load_shared_object(
      "extern \"C\" void off_by_one(float* p, int n) { for (int i = 0; i <= n; ++i) p[i] = 1; }\n");
  auto fn = reinterpret_cast<void (*)(float*, int)>(so->symbol("off_by_one"));
  std::vector<float> ok(9);
  fn(ok.data(), 8);  // in bounds: 9 elements written
  EXPECT_EQ(ok[8], 1.0f);
  EXPECT_DEATH(
      {
        std::vector<float> v(8);
        fn(v.data(), 8);
      },
      "heap-buffer-overflow");
}
#endif
