// The aotgrad command-line program: run and inspect graph files (docs/cli.md).
//
// A thin argument parser over include/aotgrad/graph_program.h and npy.h; everything it does is
// reachable from the library. Exit status: 0 success, 1 a bad graph, input or run, 2 bad usage.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/graph_program.h"
#include "aotgrad/npy.h"

namespace {

namespace ag = aotgrad;

constexpr const char* kUsage = R"(usage:
  aotgrad run GRAPH --inputs A.npy [B.npy ...] --out DIR
              [--backward [--tangents T.npy ...] [--no-grad I,J,...]
               [--partition NAME] [--memory-budget F]]
  aotgrad show GRAPH [--backward [--no-grad I,J,...] [--partition NAME] [--memory-budget F]]
  aotgrad --help

run   runs GRAPH (the text format of docs/ir.md) on the inputs, in order, with the interpreter and
      writes out0.npy, out1.npy, ... into DIR. With --backward it builds the joint graph,
      partitions it (--partition default|min_cut, --memory-budget in [0, 1]), runs forward then
      backward with the tangents (default: ones) and also writes gradI.npy for each input I that
      gets a gradient. Every floating input requires grad unless --no-grad lists its position.
show  prints GRAPH; with --backward also the joint, forward and backward graphs and the values the
      forward saves for the backward, with their totals.
exit status: 0 ok, 1 bad graph, input or run, 2 bad usage.
)";

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::string command, graph, out;
  std::vector<std::string> inputs, tangents;
  ag::GraphRunOptions options;
  bool partition_set = false, budget_set = false, no_grad_set = false;
};

std::vector<size_t> parse_positions(const std::string& text) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos)
      throw UsageError("--no-grad takes input positions separated by commas (such as 0,2), got '" +
                       text + "'");
    out.push_back(std::stoul(item));
    start = end + 1;
  }
  return out;
}

double parse_budget(const std::string& text) {
  size_t used = 0;
  double v = -1;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !(v >= 0 && v <= 1))
    throw UsageError("--memory-budget takes a number in [0, 1], got '" + text + "'");
  return v;
}

Args parse_args(int argc, char** argv) {
  Args a;
  std::vector<std::string> v(argv + 1, argv + argc);
  if (v.empty()) throw UsageError("missing command");
  a.command = v[0];
  if (a.command != "run" && a.command != "show")
    throw UsageError("unknown command '" + a.command + "'");
  if (v.size() < 2 || v[1].rfind("--", 0) == 0)
    throw UsageError("missing GRAPH after '" + a.command + "'");
  a.graph = v[1];
  auto value_of = [&](size_t& i) {
    if (i + 1 >= v.size() || v[i + 1].rfind("--", 0) == 0)
      throw UsageError(v[i] + " needs a value");
    return v[++i];
  };
  // Collects the file names after --inputs / --tangents, up to the next flag.
  auto list_of = [&](size_t& i, std::vector<std::string>& out) {
    std::string flag = v[i];
    while (i + 1 < v.size() && v[i + 1].rfind("--", 0) != 0) out.push_back(v[++i]);
    if (out.empty()) throw UsageError(flag + " needs at least one .npy file");
  };
  bool is_run = a.command == "run";
  for (size_t i = 2; i < v.size(); ++i) {
    const std::string& f = v[i];
    if (f == "--backward") {
      a.options.backward = true;
    } else if (f == "--partition") {
      a.options.partitioner = value_of(i);
      a.partition_set = true;
    } else if (f == "--memory-budget") {
      a.options.activation_memory_budget = parse_budget(value_of(i));
      a.budget_set = true;
    } else if (f == "--no-grad") {
      a.options.no_grad = parse_positions(value_of(i));
      a.no_grad_set = true;
    } else if (is_run && f == "--inputs") {
      list_of(i, a.inputs);
    } else if (is_run && f == "--tangents") {
      list_of(i, a.tangents);
    } else if (is_run && f == "--out") {
      a.out = value_of(i);
    } else {
      throw UsageError("unknown argument '" + f + "' for '" + a.command + "'");
    }
  }
  if (!a.options.backward &&
      (a.partition_set || a.budget_set || a.no_grad_set || !a.tangents.empty()))
    throw UsageError("--partition, --memory-budget, --no-grad and --tangents need --backward");
  if (is_run && a.out.empty()) throw UsageError("run needs --out DIR");
  return a;
}

// Reads input files, naming the file and its position when one does not fit the graph.
std::vector<ag::Tensor> read_inputs(const ag::GraphProgram& prog,
                                    const std::vector<std::string>& files) {
  const auto& want = prog.inputs();
  if (files.size() != want.size()) {
    std::string names;
    for (const ag::GraphInputInfo& in : want) names += " %" + in.name;
    throw std::invalid_argument("the graph takes " + std::to_string(want.size()) + " inputs (" +
                                names + " ), --inputs gave " + std::to_string(files.size()) +
                                " files");
  }
  std::vector<ag::Tensor> out;
  for (size_t i = 0; i < files.size(); ++i) {
    ag::Tensor t = ag::read_npy(files[i]);
    try {
      prog.check_input(i, t);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(files[i] + " (--inputs position " + std::to_string(i) +
                                  "): " + e.what());
    }
    out.push_back(std::move(t));
  }
  return out;
}

// bf16 has no NumPy dtype: such results are written as f32, which holds every bf16 value exactly.
void write_result(const std::filesystem::path& path, const ag::Tensor& t) {
  if (t.dtype() == ag::DType::bf16) {
    std::cerr << "aotgrad: note: " << path.string()
              << " is bf16, written as f32 (NumPy has no bf16)\n";
    ag::write_npy(path.string(), t.to(ag::DType::f32));
    return;
  }
  ag::write_npy(path.string(), t);
}

int run(const Args& a) {
  ag::GraphProgram prog = ag::GraphProgram::load(a.graph);
  std::vector<ag::Tensor> inputs = read_inputs(prog, a.inputs);
  std::vector<ag::Tensor> tangents;
  for (const std::string& f : a.tangents) tangents.push_back(ag::read_npy(f));
  ag::GraphRunResult r = prog.run(inputs, a.options, tangents);
  std::filesystem::path dir(a.out);
  std::filesystem::create_directories(dir);
  for (size_t i = 0; i < r.outputs.size(); ++i)
    write_result(dir / ("out" + std::to_string(i) + ".npy"), r.outputs[i]);
  for (size_t i = 0; i < r.grads.size(); ++i)
    if (r.grads[i].defined()) write_result(dir / ("grad" + std::to_string(i) + ".npy"), r.grads[i]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--help" || s == "-h" || (i == 1 && s == "help")) {
      std::cout << kUsage;
      return 0;
    }
  }
  Args args;
  try {
    args = parse_args(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "aotgrad: " << e.what() << "\n" << kUsage;
    return 2;
  }
  try {
    if (args.command == "run") return run(args);
    std::cout << ag::GraphProgram::load(args.graph).show(args.options);
    return 0;
  } catch (const ag::GraphParseError& e) {
    std::cerr << e.what() << "\n";  // GRAPH:LINE:COLUMN: message
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "aotgrad: error: " << e.what() << "\n";
    return 1;
  }
}
