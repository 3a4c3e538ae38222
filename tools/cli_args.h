// The `aotgrad` command line, parsed (docs/cli.md): what main() runs, as plain data.
//
// Split from main() so that tests and fuzz/cli_args_fuzz.cpp call it without a process: it never
// exits, aborts or prints, and reads no file.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/graph_program.h"

namespace aotgrad::cli {

// The usage text `aotgrad --help` prints, and `aotgrad run --help` / `aotgrad show --help`.
extern const char* const kUsage;
extern const char* const kRunUsage;
extern const char* const kShowUsage;

// A mistake in the command line itself (exit status 2). what() is one line of at most ~300
// characters naming the flag or argument and what it takes; argument bytes are escaped.
class UsageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct CliArgs {
  enum class Command { help, version, run, show };
  Command command = Command::help;
  // For Command::help: the command whose help was asked for (run, show), or help for all.
  Command help_topic = Command::help;
  bool dot = false;   // show --dot: Graphviz instead of text
  bool code = false;  // show --code: the cpp backend's schedule and generated source
  std::string graph;  // GRAPH, a path
  std::string out;    // --out DIR (run only)
  std::vector<std::string> inputs, tangents;
  std::vector<std::string> load_ops;  // --load-ops LIB ...: custom-op libraries, loaded first
  GraphRunOptions options;
};

// Limits on what one flag takes; past them the command line is a mistake, not a request.
constexpr size_t kMaxListedFiles = 4096;      // --inputs, --tangents
constexpr size_t kMaxNoGradPositions = 4096;  // --no-grad
constexpr size_t kMaxInputPosition = 1'000'000;

// Reads the arguments after the program name. `--help`, `-h` anywhere (or `help` first) gives
// Command::help (with help_topic run or show when it follows that command); `--version` first (or
// `version`) gives Command::version. Throws UsageError, and nothing else but std::bad_alloc, for any other mistake:
// unknown command or flag, a flag given twice or without its value, a number that does not parse
// or is out of range, backward-only flags without --backward, run without --out.
CliArgs parse_cli_args(const std::vector<std::string>& args);

// `what` as one printable line of at most 300 characters: the form every CLI message takes.
// Non-printable bytes become \xHH; backslashes stay (the pieces of `what` are escaped already).
std::string one_line(std::string_view what);

}  // namespace aotgrad::cli
