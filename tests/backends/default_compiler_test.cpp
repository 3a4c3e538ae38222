// default_compiler(): what AotConfig{} and GraphRunOptions{} name. The code generator wherever a
// C++ compiler runs, the interpreter otherwise, and $AOTGRAD_COMPILER over both (this test binary
// sets it to "interpreter" before main unless the environment chose: default_compiler_env.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "aotgrad/aot.h"
#include "aotgrad/graph_program.h"
#include "backends/backend.h"

namespace ag = aotgrad;

TEST(DefaultCompiler, CppWhereACompilerRunsElseTheInterpreterAndTheEnvironmentOverBoth) {
  EXPECT_EQ(ag::backends::choose_default_compiler(nullptr, true), "cpp");
  EXPECT_EQ(ag::backends::choose_default_compiler("", true), "cpp");
  EXPECT_EQ(ag::backends::choose_default_compiler(nullptr, false), "interpreter");
  EXPECT_EQ(ag::backends::choose_default_compiler("interpreter", true), "interpreter");
  EXPECT_EQ(ag::backends::choose_default_compiler("mine", false), "mine");
}

TEST(DefaultCompiler, ConfigsNameItAndThisBinaryTakesItFromTheEnvironment) {
  const char* env = std::getenv("AOTGRAD_COMPILER");
  ASSERT_NE(env, nullptr);  // set before main unless the environment had it
  EXPECT_EQ(ag::default_compiler(), env);
  EXPECT_EQ(ag::AotConfig{}.fw_compiler, env);
  EXPECT_EQ(ag::GraphRunOptions{}.compiler, env);
  EXPECT_EQ(ag::AotConfig{.name = "f"}.fw_compiler, env);  // designated initializers too
}
