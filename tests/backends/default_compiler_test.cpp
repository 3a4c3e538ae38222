// default_compiler(): what AotConfig{} and GraphRunOptions{} name. The interpreter, unless
// $AOTGRAD_COMPILER names another (`AOTGRAD_COMPILER=cpp ./build/aotgrad_tests` runs the whole
// suite on the code generator).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "aotgrad/aot.h"
#include "aotgrad/graph_program.h"
#include "backends/backend.h"

namespace ag = aotgrad;

TEST(DefaultCompiler, TheInterpreterUnlessTheEnvironmentNamesAnother) {
  EXPECT_EQ(ag::backends::choose_default_compiler(nullptr), "interpreter");
  EXPECT_EQ(ag::backends::choose_default_compiler(""), "interpreter");
  EXPECT_EQ(ag::backends::choose_default_compiler("cpp"), "cpp");
  EXPECT_EQ(ag::backends::choose_default_compiler("mine"), "mine");
}

TEST(DefaultCompiler, ConfigsNameIt) {
  const char* env = std::getenv("AOTGRAD_COMPILER");
  const std::string expected = env && *env ? env : "interpreter";
  EXPECT_EQ(ag::default_compiler(), expected);
  EXPECT_EQ(ag::AotConfig{}.fw_compiler, expected);
  EXPECT_EQ(ag::GraphRunOptions{}.compiler, expected);
  EXPECT_EQ(ag::AotConfig{.name = "f"}.fw_compiler, expected);  // designated initializers too
}
