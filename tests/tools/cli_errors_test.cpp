// The `aotgrad` binary on user mistakes: exit status 2 for a wrong command line, 1 for a bad
// graph, input or run, and always exactly one printable line of at most ~300 characters on
// stderr that names the flag, file or node.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;

namespace {

std::string cli_data(const std::string& name) {
  return std::string(AOTGRAD_TEST_DATA) + "/cli/" + name;
}

class CliErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aotgrad_clierr_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `aotgrad` with `args` (each single-quoted for the shell); returns the exit status, or
  // -1 when it died from a signal (an abort).
  int cli(const std::vector<std::string>& args) {
    std::string cmd = AOTGRAD_CLI_PATH;
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " >" + f("stdout") + " 2>" + f("stderr");
    int r = std::system(cmd.c_str());
    return WIFEXITED(r) ? WEXITSTATUS(r) : -1;
  }
  std::string err() const {
    std::ifstream in(dir_ / "stderr", std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The single line on stderr, without its newline; a test failure if there is not exactly one
  // printable line of at most 300 characters.
  std::string line() const {
    std::string e = err();
    EXPECT_TRUE(!e.empty() && e.back() == '\n' && e.find('\n') == e.size() - 1) << e;
    std::string l = e.empty() ? e : e.substr(0, e.size() - 1);
    EXPECT_LE(l.size(), 300u) << l;
    for (char c : l) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << "raw byte in: " << l;
    return l;
  }
  std::string f(const std::string& name) const { return (dir_ / name).string(); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(f(name), std::ios::binary) << text;
    return f(name);
  }

  fs::path dir_;
};

}  // namespace

TEST_F(CliErrors, OutOfRangeNumberIsAUsageErrorNotAnAbort) {
  EXPECT_EQ(cli({"show", cli_data("mlp.graph"), "--backward", "--no-grad", "18446744073709551616"}),
            2);
  EXPECT_EQ(line(),
            "aotgrad: --no-grad: position '18446744073709551616' is out of range (positions go "
            "from 0 to 1000000) (aotgrad --help shows the usage)");
  EXPECT_EQ(cli({"show", cli_data("mlp.graph"), "--backward", "--memory-budget", "1e999"}), 2);
  EXPECT_NE(line().find("--memory-budget takes a number in [0, 1], got '1e999'"),
            std::string::npos);
}

TEST_F(CliErrors, UsageErrorsAreOneEscapedLine) {
  EXPECT_EQ(cli({"run", cli_data("mlp.graph"), "--frob\x07\x1b[2J", "--out", f("o")}), 2);
  EXPECT_EQ(line(),
            "aotgrad: unknown flag '--frob\\x07\\x1b[2J' for 'run' (aotgrad --help shows the "
            "usage)");
  EXPECT_EQ(cli({"run", cli_data("mlp.graph"), "--out"}), 2);
  EXPECT_NE(line().find("--out needs a value"), std::string::npos);
  EXPECT_EQ(cli({}), 2);
  EXPECT_NE(line().find("missing command"), std::string::npos);
}

TEST_F(CliErrors, GraphFilesThatAreNotRegularFiles) {
  EXPECT_EQ(cli({"show", f("missing.graph")}), 1);
  EXPECT_EQ(line(), "aotgrad: error: " + f("missing.graph") +
                        ": cannot open the graph file (does it exist?)");
  fs::create_directories(f("dir.graph"));
  EXPECT_EQ(cli({"show", f("dir.graph")}), 1);
  EXPECT_EQ(line(), "aotgrad: error: " + f("dir.graph") +
                        ": not a regular file; GRAPH must be a graph text file");
}

TEST_F(CliErrors, HostileGraphTextGivesFileLineColumn) {
  std::string g = write("deep.graph", "graph g(%x: f32[2]) {\n  %y: f32[2] = aten.add.Tensor(%x, " +
                                          std::string(50000, '[') + ")\n  return (%y)\n}\n");
  EXPECT_EQ(cli({"show", g}), 1);
  EXPECT_EQ(line(), g + ":2:100: lists nested deeper than 64 levels");
  std::string bytes = write("bytes.graph", "graph g(%x: f32[2]) {\n\x01\xff\n}\n");
  EXPECT_EQ(cli({"show", bytes}), 1);
  EXPECT_EQ(line(), bytes +
                        ":2:1: expected a statement (%result: type = op(...), or return (...)), "
                        "found the byte 0x01");
}

TEST_F(CliErrors, ANodeThatDoesNotVerifyGivesItsLine) {
  EXPECT_EQ(cli({"show", cli_data("bad_shape.graph")}), 1);
  EXPECT_EQ(line(), cli_data("bad_shape.graph") +
                        ":2:3: verify_graph: node %mm = aten.mm.default: result %mm is recorded as "
                        "f32[4,5] but the op's meta function computes f32[4,2] from the recorded "
                        "inputs");
}

TEST_F(CliErrors, BadInputsNameTheFile) {
  std::string x = f("x.npy"), w = f("w.npy"), b = f("b.npy"), idx = f("idx.npy");
  ag::write_npy(x, ag::ones({4, 3}));
  ag::write_npy(w, ag::ones({3, 2}));
  ag::write_npy(b, ag::ones({2}));
  ag::write_npy(idx, ag::zeros({4}, ag::DType::i64));
  fs::create_directories(f("dir.npy"));
  EXPECT_EQ(
      cli({"run", cli_data("mlp.graph"), "--inputs", x, w, f("dir.npy"), idx, "--out", f("o")}), 1);
  EXPECT_EQ(line(),
            "aotgrad: error: npy file '" + f("dir.npy") +
                "': not a regular file (a directory, device or pipe); expected a .npy file");
  EXPECT_EQ(cli({"run", cli_data("mlp.graph"), "--inputs", x, w, b, "--out", f("o")}), 1);
  EXPECT_EQ(line(), "aotgrad: error: " + cli_data("mlp.graph") +
                        " takes 4 inputs ( %x %w %b %idx ), --inputs gave 3 files");
  EXPECT_EQ(cli({"run", cli_data("mlp.graph"), "--inputs", x, x, b, idx, "--out", f("o")}), 1);
  EXPECT_NE(line().find(x + " (--inputs position 1): input 1 (%w): expected f32[3, 2], got "
                            "f32[4, 3]"),
            std::string::npos);
}

TEST_F(CliErrors, AGraphThatFailsToRunExitsWith1) {
  // Verifies (shapes agree) but gathers row 7 of a 3-row table: the kernel refuses at run time.
  std::string g = write("gather.graph",
                        "graph g(%w: f32[3,2], %i: i64[1]) {\n"
                        "  %e: f32[1,2] = aten.index_select.default(%w, 0, %i)\n"
                        "  return (%e)\n}\n");
  ag::write_npy(f("w.npy"), ag::ones({3, 2}));
  ag::write_npy(f("i.npy"), ag::from_vector(std::vector<int64_t>{7}, {1}));
  EXPECT_EQ(cli({"run", g, "--inputs", f("w.npy"), f("i.npy"), "--out", f("o")}), 1);
  EXPECT_EQ(line().rfind("aotgrad: error: ", 0), 0u);
}
