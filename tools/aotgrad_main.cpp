// The aotgrad command-line program: run and inspect graph files (docs/cli.md).
//
// A thin argument parser over include/aotgrad/graph_program.h and npy.h; everything it does is
// reachable from the library. Exit status: 0 success, 1 a bad graph, input or run, 2 bad usage.
#include <filesystem>
#include <iostream>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "aotgrad/custom_op.h"
#include "aotgrad/graph_program.h"
#include "aotgrad/npy.h"
#include "aotgrad/version.h"
#include "cache_command.h"
#include "cli_args.h"
#include "export_command.h"

namespace {

namespace ag = aotgrad;
namespace cli = aotgrad::cli;

// Reads input files, naming the file and its position when one does not fit the graph.
std::vector<ag::Tensor> read_inputs(const std::string& graph, const ag::GraphProgram& prog,
                                    const std::vector<std::string>& files) {
  const auto& want = prog.inputs();
  if (files.size() != want.size()) {
    std::string names;
    for (const ag::GraphInputInfo& in : want) names += " %" + in.name;
    throw std::invalid_argument(graph + " takes " + std::to_string(want.size()) + " inputs (" +
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
    std::cerr << cli::one_line("aotgrad: note: " + path.string() +
                               " is bf16, written as f32 (NumPy has no bf16)")
              << "\n";
    ag::write_npy(path.string(), t.to(ag::DType::f32));
    return;
  }
  ag::write_npy(path.string(), t);
}

// GraphProgram::load, refusing what is not a regular file first: a FIFO or /dev/zero would block
// or never end, and a directory reads as an empty graph.
ag::GraphProgram load_graph(const std::string& path) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    throw std::invalid_argument(path + ": cannot open the graph file (does it exist?)");
  if (!std::filesystem::is_regular_file(st))
    throw std::invalid_argument(path + ": not a regular file; GRAPH must be a graph text file");
  return ag::GraphProgram::load(path);
}

int run(const cli::CliArgs& a) {
  ag::GraphProgram prog = load_graph(a.graph);
  std::vector<ag::Tensor> inputs = read_inputs(a.graph, prog, a.inputs);
  std::vector<ag::Tensor> tangents;
  for (const std::string& f : a.tangents) tangents.push_back(ag::read_npy(f));
  ag::GraphRunResult r = prog.run(inputs, a.options, tangents);
  std::filesystem::path dir(a.out);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw std::runtime_error("--out " + a.out + ": cannot create the output directory" +
                             (ec ? " (" + ec.message() + ")" : std::string(" (not a directory)")));
  for (size_t i = 0; i < r.outputs.size(); ++i)
    write_result(dir / ("out" + std::to_string(i) + ".npy"), r.outputs[i]);
  for (size_t i = 0; i < r.grads.size(); ++i)
    if (r.grads[i].defined()) write_result(dir / ("grad" + std::to_string(i) + ".npy"), r.grads[i]);
  // The inputs the graph wrote into (a training step's running statistics): their new values,
  // and which they were.
  std::string mutated;
  for (size_t i = 0; i < r.mutated.size(); ++i) {
    if (!r.mutated[i].defined()) continue;
    write_result(dir / ("mutated" + std::to_string(i) + ".npy"), r.mutated[i]);
    mutated +=
        (mutated.empty() ? "" : ", ") + std::to_string(i) + " (%" + prog.inputs()[i].name + ")";
  }
  if (!mutated.empty())
    std::cout << "mutated inputs: " << mutated << "; new values in " << a.out
              << "/mutated<i>.npy\n";
  return 0;
}

// Exit status 1 with one line on stderr: the library's message, escaped and bounded.
int failure(std::string_view what) {
  std::cerr << cli::one_line(what) << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]) == "cache")  // tools/cache_command.cpp
    return aotgrad::tools::cache_command(std::vector<std::string>(argv + 2, argv + argc));
  if (argc > 1 && std::string_view(argv[1]) == "export")
    return cli::export_main(std::vector<std::string>(argv + 2, argv + argc));
  cli::CliArgs args;
  try {
    args = cli::parse_cli_args(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const cli::UsageError& e) {
    std::cerr << "aotgrad: " << e.what() << " (aotgrad --help shows the usage)\n";
    return 2;
  } catch (const std::bad_alloc&) {
    return failure("aotgrad: error: out of memory while reading the command line");
  }
  try {
    for (const std::string& lib : args.load_ops) ag::load_op_library(lib);
    switch (args.command) {
      case cli::CliArgs::Command::help:
        std::cout << (args.help_topic == cli::CliArgs::Command::run    ? cli::kRunUsage
                      : args.help_topic == cli::CliArgs::Command::show ? cli::kShowUsage
                                                                       : cli::kUsage);
        return 0;
      case cli::CliArgs::Command::version:
        std::cout << "aotgrad " << AOTGRAD_VERSION << "\n";
        return 0;
      case cli::CliArgs::Command::run:
        return run(args);
      case cli::CliArgs::Command::show:
        std::cout << (args.dot    ? load_graph(args.graph).show_dot(args.options)
                      : args.code ? load_graph(args.graph).show_code(args.options)
                                  : load_graph(args.graph).show(args.options));
        return 0;
    }
  } catch (const ag::GraphParseError& e) {
    return failure(e.what());  // GRAPH:LINE:COLUMN: message
  } catch (const std::bad_alloc&) {
    return failure("aotgrad: error: out of memory running " + args.graph);
  } catch (const std::exception& e) {
    return failure(std::string("aotgrad: error: ") + e.what());
  }
  return 1;
}
