// parse_cli_args (tools/cli_args.h): the `aotgrad` command line as data, and one bounded,
// escaped UsageError line naming the flag for every mistake.
#include "cli_args.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace cli = aotgrad::cli;

namespace {

// The UsageError message for `args` ("" when they parse).
std::string usage_error(const std::vector<std::string>& args) {
  try {
    cli::parse_cli_args(args);
  } catch (const cli::UsageError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(CliArgs, ReadsARunCommand) {
  cli::CliArgs a = cli::parse_cli_args(
      {"run", "g.graph", "--inputs", "a.npy", "b.npy", "--backward", "--no-grad", "0,2",
       "--partition", "min_cut", "--memory-budget", "0.25", "--tangents", "t.npy", "--out", "dir"});
  EXPECT_EQ(a.command, cli::CliArgs::Command::run);
  EXPECT_EQ(a.graph, "g.graph");
  EXPECT_EQ(a.inputs, (std::vector<std::string>{"a.npy", "b.npy"}));
  EXPECT_EQ(a.tangents, (std::vector<std::string>{"t.npy"}));
  EXPECT_EQ(a.out, "dir");
  EXPECT_TRUE(a.options.backward);
  EXPECT_EQ(a.options.no_grad, (std::vector<size_t>{0, 2}));
  EXPECT_EQ(a.options.partitioner, "min_cut");
  EXPECT_EQ(a.options.activation_memory_budget, 0.25);
  EXPECT_EQ(cli::parse_cli_args({"show", "g.graph", "--help"}).command,
            cli::CliArgs::Command::help);
  EXPECT_EQ(cli::parse_cli_args({"help"}).command, cli::CliArgs::Command::help);
}

TEST(CliArgs, NumbersOutOfRangeAreUsageErrors) {
  // std::stoul threw std::out_of_range here, which aborted the program.
  EXPECT_EQ(usage_error({"show", "g", "--backward", "--no-grad", "18446744073709551616"}),
            "--no-grad: position '18446744073709551616' is out of range (positions go from 0 to "
            "1000000)");
  EXPECT_EQ(usage_error({"show", "g", "--backward", "--no-grad", "1000001"}),
            "--no-grad: position '1000001' is out of range (positions go from 0 to 1000000)");
  EXPECT_EQ(usage_error({"show", "g", "--backward", "--no-grad", "1,,2"}),
            "--no-grad takes input positions separated by commas (such as 0,2), got '1,,2'");
  EXPECT_EQ(usage_error({"show", "g", "--backward", "--no-grad", "-1"}),
            "--no-grad takes input positions separated by commas (such as 0,2), got '-1'");
  for (const char* budget : {"nan", "-0.5", "1.0001", "1e309", "0x1", "", " 0.5", "inf"})
    EXPECT_NE(
        usage_error({"show", "g", "--backward", "--memory-budget", budget}).find("--memory-budget"),
        std::string::npos)
        << budget;
}

TEST(CliArgs, EveryMistakeNamesTheFlag) {
  EXPECT_EQ(usage_error({}), "missing command (run or show)");
  EXPECT_EQ(usage_error({"launch", "g"}), "unknown command 'launch' (expected run or show)");
  EXPECT_EQ(usage_error({"run"}), "missing GRAPH after 'run'");
  EXPECT_EQ(usage_error({"run", "", "--out", "d"}),
            "GRAPH is an empty argument; expected a graph file");
  EXPECT_EQ(usage_error({"run", "g", "--out"}), "--out needs a value");
  EXPECT_EQ(usage_error({"run", "g", "--out", "--backward"}), "--out needs a value");
  EXPECT_EQ(usage_error({"run", "g", "--out", "a", "--out", "b"}), "--out is given twice");
  EXPECT_EQ(usage_error({"run", "g", "--inputs", "--out", "d"}),
            "--inputs needs at least one .npy file");
  EXPECT_EQ(usage_error({"run", "g", "--inputs", "a", "--out", "d", "stray"}),
            "unexpected argument 'stray' after GRAPH (flags start with --)");
  EXPECT_EQ(usage_error({"show", "g", "--out", "d"}), "unknown flag '--out' for 'show'");
  EXPECT_EQ(usage_error({"show", "g", "--no-grad", "0"}),
            "--partition, --memory-budget, --no-grad and --tangents need --backward");
  EXPECT_EQ(usage_error({"run", "g", "--inputs", "a"}), "run needs --out DIR");
}

TEST(CliArgs, MessagesEscapeArgumentsAndStayShort) {
  std::string m = usage_error({"run", "g", "--x\x07\x1b[2J" + std::string(10000, 'y')});
  EXPECT_EQ(m.rfind("unknown flag '--x\\x07\\x1b[2Jyyy", 0), 0u) << m;
  EXPECT_LE(m.size(), 300u);
  for (char c : m) EXPECT_TRUE(c >= 0x20 && c < 0x7f) << m;
  EXPECT_EQ(cli::one_line("a\nb"), "a\\x0ab");
  EXPECT_EQ(cli::one_line(std::string(1000, 'z')).size(), 300u);
}
