// `aotgrad export` (export_command.h). Reading guide: parse_export_args reads the flags;
// export_main loads GRAPH, calls aot_export_graph (aotgrad/export.h) and writes its graphs and
// signature into --out.
#include "export_command.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>

#include "aotgrad/export.h"
#include "aotgrad/graph_program.h"
#include "cli_args.h"
#include "tensor/message_text.h"

namespace aotgrad::cli {

const char* const kExportUsage =
    R"(usage: aotgrad export GRAPH --out DIR [--inference | --joint [--loss-output K]]

Exports GRAPH (the text format of docs/ir.md) as aot_export_module exports a module (docs/export.md):
its inputs described param(NAME) / buffer(NAME) are the parameters and buffers, the others user
inputs. Writes into DIR (created if missing):
  --inference (default)  inference.txt: the forward graph, mutated inputs returned first
  --joint                joint.txt: (params, buffers, user inputs) -> (mutated inputs, outputs,
                         gradients), the loss seeded with ones; forward.txt and backward.txt: the
                         joint partitioned as aot_function runs it
  signature.json         parameters, buffers, user inputs and outputs, inputs_to_parameters,
                         buffers_to_mutate, ... and with --joint the backward signature
  --loss-output K        which output is the scalar loss (default: the only output)
Parameters require grad; when GRAPH has none, every floating input it does not write into does.
Exit status: 0 ok, 1 a bad graph or one export refuses, 2 usage.
)";

namespace {

[[noreturn]] void usage(const std::string& what) {
  throw UsageError(one_line(what));
}

std::string quoted_arg(std::string_view arg) {
  return "'" + escape_for_message(arg, 60) + "'";
}

const std::string& value_of(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size() || args[i + 1].rfind("--", 0) == 0) usage(args[i] + " needs a value");
  if (args[i + 1].empty()) usage(args[i] + " needs a value, got an empty argument");
  return args[++i];
}

size_t parse_index(const std::string& text) {
  size_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text[0] == '+' || v > 1'000'000)
    usage("--loss-output takes an output position (0 to 1000000), got " + quoted_arg(text));
  return v;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path.string() + ": cannot write the file");
  std::cout << "wrote " << path.string() << "\n";
}

std::string read_graph(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw std::invalid_argument(path + ": not a readable graph file (does it exist?)");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in && !in.eof()) throw std::invalid_argument(path + ": cannot read the graph file");
  return ss.str();
}

int run_export(const ExportArgs& a) {
  std::string text = read_graph(a.graph);
  ExportOptions options;
  options.trace_joint = a.joint;
  options.output_loss_index = a.loss_output;
  // Parsing first reports a bad graph as `run` and `show` do (GRAPH:LINE:COLUMN: message).
  size_t n = GraphProgram::parse(text, a.graph).num_outputs();
  if (a.joint && !a.loss_output) {
    if (n != 1)
      throw std::invalid_argument(a.graph + " has " + std::to_string(n) +
                                  " outputs; say which is the loss with --loss-output K");
    options.output_loss_index = 0;
  }
  ExportedGraph e = aot_export_graph(text, a.graph, options);
  std::filesystem::path dir(a.out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::runtime_error("--out " + a.out + ": cannot create the output directory");
  if (a.joint) {
    write_file(dir / "joint.txt", e.graph);
    write_file(dir / "forward.txt", e.forward);
    write_file(dir / "backward.txt", e.backward);
  } else {
    write_file(dir / "inference.txt", e.graph);
  }
  write_file(dir / "signature.json", e.signature.to_json());
  return 0;
}

}  // namespace

ExportArgs parse_export_args(const std::vector<std::string>& args) {
  ExportArgs a;
  for (const std::string& arg : args)
    if (arg == "--help" || arg == "-h") {
      a.help = true;
      return a;
    }
  if (args.empty() || args[0].rfind("--", 0) == 0) usage("missing GRAPH after 'export'");
  if (args[0].empty()) usage("GRAPH is an empty argument; expected a graph file");
  a.graph = args[0];
  bool inference = false, out_seen = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& f = args[i];
    if (f == "--out") {
      if (out_seen) usage("--out is given twice");
      out_seen = true;
      a.out = value_of(args, i);
    } else if (f == "--joint" || f == "--inference") {
      if (a.joint || inference) usage("give one of --joint and --inference, once");
      (f == "--joint" ? a.joint : inference) = true;
    } else if (f == "--loss-output") {
      if (a.loss_output) usage("--loss-output is given twice");
      a.loss_output = parse_index(value_of(args, i));
    } else if (f.rfind("--", 0) == 0) {
      usage("unknown flag " + quoted_arg(f) + " for 'export'");
    } else {
      usage("unexpected argument " + quoted_arg(f) + " after GRAPH (flags start with --)");
    }
  }
  if (a.loss_output && !a.joint) usage("--loss-output needs --joint");
  if (a.out.empty()) usage("export needs --out DIR");
  return a;
}

int export_main(const std::vector<std::string>& args) {
  ExportArgs a;
  try {
    a = parse_export_args(args);
  } catch (const UsageError& e) {
    std::cerr << "aotgrad: " << e.what() << " (aotgrad export --help shows the usage)\n";
    return 2;
  }
  if (a.help) {
    std::cout << kExportUsage;
    return 0;
  }
  try {
    return run_export(a);
  } catch (const GraphParseError& e) {
    std::cerr << one_line(e.what()) << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << one_line("aotgrad: error: out of memory exporting " + a.graph) << "\n";
  } catch (const std::exception& e) {
    std::cerr << one_line(std::string("aotgrad: error: ") + e.what()) << "\n";
  }
  return 1;
}

}  // namespace aotgrad::cli
