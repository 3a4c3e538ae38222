// What the cpp compiler made, for people: GraphProgram::show_code (`aotgrad show --code`) and the
// AOTGRAD_DUMP files, named after the compiled function.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;

TEST(CppCodeView, ShowCodeListsTheScheduleThenTheSource) {
  ag::GraphProgram p =
      ag::GraphProgram::parse(R"(graph f(%x: f32[4,8], %w: f32[8,8], %r: f32[4,8]) {
  %mm: f32[4,8] = aten.mm.default(%x, %w)
  %o: f32[4,8] = aten.add.Tensor(%mm, %r)
  %t: f32[4,8] = aten.tanh.default(%x)
  %s: f32[4,8] = aten.mul.Tensor(%t, %o)
  return (%s)
})");
  std::string code = p.show_code();
  EXPECT_TRUE(ag::testing::contains(code, "// cpp schedule of graph f: 2 steps\n")) << code;
  EXPECT_TRUE(ag::testing::contains(
      code, "//   0: gemm aten.mm.default + residual %r (oneDNN post-ops) -> %o\n"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code, "//   1: kernel0 (2 nodes) -> %s (in the buffer of %o)"))
      << code;
  EXPECT_TRUE(ag::testing::contains(code, "extern \"C\" void kernel0(")) << code;
}

TEST(CppCodeView, DumpFilesCarryTheFunctionsName) {
  std::string dir = (std::filesystem::temp_directory_path() / "aotgrad_cpp_names_XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  setenv("AOTGRAD_DUMP", dir.c_str(), 1);
  ag::AotConfig cfg;
  cfg.fw_compiler = "cpp";
  cfg.name = "scaled_cos";
  auto fn = ag::aot_function([](const ag::Tensor& x) { return (x * 3.0).cos().sum(); }, cfg);
  ag::Tensor x = ag::testing::test_input({5}, -1.0, 1.0, 1, true);
  fn(x).backward();
  unsetenv("AOTGRAD_DUMP");
  for (const char* file :
       {"scaled_cos_0_cpp_forward_code.txt", "scaled_cos_0_cpp_backward_code.txt"}) {
    std::ifstream f(std::filesystem::path(dir) / file);
    std::stringstream text;
    text << f.rdbuf();
    EXPECT_TRUE(ag::testing::contains(text.str(), "// cpp schedule of graph")) << file;
  }
  std::filesystem::remove_all(dir);
}
