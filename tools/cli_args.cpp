// Argument parsing for the `aotgrad` program (see cli_args.h). Reading guide: parse_cli_args walks
// the arguments once; each flag's value goes through a checked reader (positions, budget) that
// turns any malformed or out-of-range text into a UsageError naming the flag.
#include "cli_args.h"

#include <charconv>
#include <cmath>

#include "tensor/message_text.h"

namespace aotgrad::cli {

const char* const kUsage = R"(usage:
  aotgrad run GRAPH --inputs A.npy [B.npy ...] --out DIR
              [--backward [--tangents T.npy ...] [--no-grad I,J,...]
               [--partition NAME] [--memory-budget F]]
  aotgrad show GRAPH [--dot | --code]
               [--backward [--no-grad I,J,...] [--partition NAME] [--memory-budget F]]
  aotgrad export GRAPH --out DIR [--inference | --joint [--loss-output K]]
  aotgrad cache stats | clear
  aotgrad --help | run --help | show --help | export --help
  aotgrad --version

run   runs GRAPH (the text format of docs/ir.md) on the inputs, in order, with the interpreter and
      writes out0.npy, out1.npy, ... into DIR. With --backward it builds the joint graph,
      partitions it (--partition default|min_cut, --memory-budget in [0, 1]), runs forward then
      backward with the tangents (default: ones) and also writes gradI.npy for each input I that
      gets a gradient. Every floating input requires grad unless --no-grad lists its position.
show  prints GRAPH; with --backward also the joint, forward and backward graphs and the values the
      forward saves for the backward, with their totals. --dot prints Graphviz instead, --code the
      cpp compiler's schedule and generated C++.
export writes GRAPH's forward (or joint) graph and its signature as aot_export_module would.
cache  prints what the on-disk cache holds (stats) or empties it (clear); docs/caching.md.
exit status: 0 ok, 1 bad graph, input or run, 2 bad usage (docs/cli.md).
)";

const char* const kRunUsage = R"(usage: aotgrad run GRAPH --inputs A.npy [B.npy ...] --out DIR
                   [--backward [--tangents T.npy ...] [--no-grad I,J,...]
                    [--partition NAME] [--memory-budget F]] [--load-ops LIB.so ...]

Runs GRAPH (the text format of docs/ir.md) on the .npy inputs, in the order of its signature, and
writes out0.npy, out1.npy, ... into DIR (created if missing).
  --inputs A.npy ...    one file per graph input; dtype and shape must match the signature
  --out DIR             where results go
  --backward            also differentiate: build the joint graph, partition it, run forward then
                        backward, and write gradI.npy for each input I that gets a gradient
  --tangents T.npy ...  gradients of the outputs that require grad (default: ones)
  --no-grad I,J,...     input positions that never require grad (every other floating input does)
  --partition NAME      default | min_cut (default: default)
  --memory-budget F     min_cut's activation memory budget in [0, 1] (1: fastest; 0: save least)
  --load-ops LIB.so ... shared libraries that register custom ops (their static initializers, or
                        an exported aotgrad_register_ops()), loaded before GRAPH is read
A graph that writes into its inputs (make_fx training steps) is functionalized first; each input
it wrote is saved as mutatedI.npy and named on stdout. Exit status: 0 ok, 1 failure, 2 usage.
)";

const char* const kShowUsage = R"(usage: aotgrad show GRAPH [--dot | --code]
                    [--backward [--no-grad I,J,...] [--partition NAME] [--memory-budget F]]
                    [--load-ops LIB.so ...]

Prints GRAPH as parsed. With --backward also the joint graph, the partitioned forward and backward
graphs and the saved-value report (every value the forward keeps for the backward, with its size
and the totals). --dot prints the same graphs as Graphviz digraphs (render with: dot -Tsvg);
--code prints what the cpp compiler makes of them: its schedule and the generated C++ source.
Flags as for `aotgrad run --help`. Exit status: 0 ok, 1 failure, 2 usage.
)";

namespace {

constexpr size_t kMaxLine = 300;

// An argument as messages show it: quoted, escaped, at most 60 characters.
std::string quoted(std::string_view arg) {
  return "'" + escape_for_message(arg, 60) + "'";
}

[[noreturn]] void usage(const std::string& what) {
  throw UsageError(one_line(what));
}

bool is_flag(const std::string& arg) {
  return arg.size() >= 2 && arg[0] == '-' && arg[1] == '-';
}

std::vector<size_t> parse_positions(const std::string& text) {
  std::vector<size_t> out;
  std::string_view rest = text;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    size_t v = 0;
    auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    bool digits = !item.empty() && item.find_first_not_of("0123456789") == std::string_view::npos;
    if (!digits || ptr != item.data() + item.size())
      usage("--no-grad takes input positions separated by commas (such as 0,2), got " +
            quoted(text));
    if (ec == std::errc::result_out_of_range || v > kMaxInputPosition)
      usage("--no-grad: position " + quoted(item) + " is out of range (positions go from 0 to " +
            std::to_string(kMaxInputPosition) + ")");
    if (out.size() == kMaxNoGradPositions)
      usage("--no-grad lists more than " + std::to_string(kMaxNoGradPositions) + " positions");
    out.push_back(v);
    if (comma == std::string_view::npos) return out;
    rest.remove_prefix(comma + 1);
  }
}

double parse_budget(const std::string& text) {
  double v = -1;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v >= 0 && v <= 1))
    usage("--memory-budget takes a number in [0, 1], got " + quoted(text));
  return v;
}

// Walks the flags after `COMMAND GRAPH`.
class FlagReader {
 public:
  FlagReader(const std::vector<std::string>& args, CliArgs& a) : args_(args), a_(a) {}

  void read_all() {
    for (i_ = 2; i_ < args_.size(); ++i_) flag(args_[i_]);
  }
  bool backward_only_flags() const {
    return partition_seen_ || budget_seen_ || no_grad_seen_ || tangents_seen_;
  }

 private:
  void flag(const std::string& f) {
    bool is_run = a_.command == CliArgs::Command::run;
    if (f == "--backward") {
      once(f, backward_seen_);
      a_.options.backward = true;
    } else if (f == "--partition") {
      once(f, partition_seen_);
      a_.options.partitioner = value();
    } else if (f == "--memory-budget") {
      once(f, budget_seen_);
      a_.options.activation_memory_budget = parse_budget(value());
    } else if (f == "--no-grad") {
      once(f, no_grad_seen_);
      a_.options.no_grad = parse_positions(value());
    } else if (!is_run && f == "--dot") {
      once(f, dot_seen_);
      a_.dot = true;
    } else if (!is_run && f == "--code") {
      once(f, code_seen_);
      a_.code = true;
    } else if (is_run && f == "--inputs") {
      once(f, inputs_seen_);
      list(a_.inputs);
    } else if (is_run && f == "--tangents") {
      once(f, tangents_seen_);
      list(a_.tangents);
    } else if (is_run && f == "--out") {
      once(f, out_seen_);
      a_.out = value();
    } else if (f == "--load-ops") {
      once(f, load_ops_seen_);
      list(a_.load_ops);
    } else if (is_flag(f)) {
      usage("unknown flag " + quoted(f) + " for '" + args_[0] + "'");
    } else {
      usage("unexpected argument " + quoted(f) + " after GRAPH (flags start with --)");
    }
  }

  void once(const std::string& f, bool& seen) {
    if (seen) usage(f + " is given twice");
    seen = true;
  }

  // The value after the current flag: present, not a flag, not empty.
  const std::string& value() {
    const std::string& f = args_[i_];
    if (i_ + 1 >= args_.size() || is_flag(args_[i_ + 1])) usage(f + " needs a value");
    const std::string& v = args_[++i_];
    if (v.empty()) usage(f + " needs a value, got an empty argument");
    return v;
  }

  // The file names after --inputs / --tangents, up to the next flag.
  void list(std::vector<std::string>& out) {
    const std::string& f = args_[i_];
    while (i_ + 1 < args_.size() && !is_flag(args_[i_ + 1])) {
      if (args_[i_ + 1].empty()) usage(f + " lists an empty file name");
      if (out.size() == kMaxListedFiles)
        usage(f + " lists more than " + std::to_string(kMaxListedFiles) + " files");
      out.push_back(args_[++i_]);
    }
    if (out.empty()) usage(f + " needs at least one .npy file");
  }

  const std::vector<std::string>& args_;
  CliArgs& a_;
  size_t i_ = 2;
  bool backward_seen_ = false, partition_seen_ = false, budget_seen_ = false, no_grad_seen_ = false,
       inputs_seen_ = false, tangents_seen_ = false, out_seen_ = false, dot_seen_ = false,
       code_seen_ = false, load_ops_seen_ = false;
};

}  // namespace

std::string one_line(std::string_view what) {
  return escape_for_message(what, kMaxLine, /*keep_backslash=*/true);
}

CliArgs parse_cli_args(const std::vector<std::string>& args) {
  CliArgs a;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--help" || args[i] == "-h" || (i == 0 && args[i] == "help")) {
      if (i > 0 && args[0] == "run") a.help_topic = CliArgs::Command::run;
      if (i > 0 && args[0] == "show") a.help_topic = CliArgs::Command::show;
      return a;
    }
  if (!args.empty() && (args[0] == "--version" || args[0] == "version")) {
    if (args.size() > 1) usage("--version takes no arguments");
    a.command = CliArgs::Command::version;
    return a;
  }
  if (args.empty()) usage("missing command (run or show)");
  if (args[0] == "run")
    a.command = CliArgs::Command::run;
  else if (args[0] == "show")
    a.command = CliArgs::Command::show;
  else
    usage("unknown command " + quoted(args[0]) + " (expected run or show)");
  if (args.size() < 2 || is_flag(args[1])) usage("missing GRAPH after '" + args[0] + "'");
  if (args[1].empty()) usage("GRAPH is an empty argument; expected a graph file");
  a.graph = args[1];
  FlagReader reader(args, a);
  reader.read_all();
  if (!a.options.backward && reader.backward_only_flags())
    usage("--partition, --memory-budget, --no-grad and --tangents need --backward");
  if (a.command == CliArgs::Command::run && a.out.empty()) usage("run needs --out DIR");
  return a;
}

}  // namespace aotgrad::cli
