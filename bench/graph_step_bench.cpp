// Steady-state training step of a model from its graph file (issue 18 item 7): the graph written
// by tools/export_torch_graph.py --module is loaded once, then run with the backward many times,
// as a user would after `GraphProgram::load`. Driven by bench/graph_step_bench.py, which exports
// the models, times PyTorch 1.13's eager step on the same module and inputs in the same run, and
// prints the ratios:
//
//   /usr/bin/python3 bench/graph_step_bench.py [--build build] [--steps N] [--only REGEX]
//
// By hand: build/graph_step_bench DIR NO_GRAD STEPS [PARTITIONER], where DIR holds graph.txt,
// input<i>.npy and tangent<k>.npy and NO_GRAD lists the inputs that take no gradient (buffers),
// comma-separated, or "-". Prints one line of `key=value` pairs, times in ms: the CPU time of
// load_cpu (parse and functionalize), read_cpu (the .npy inputs), first_cpu (the first step:
// tracing, partitioning, compiling, or reading the artifact cache), then the wall-clock
// step_min and step_median of the steps after it and their least CPU time, step_cpu_min.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "aotgrad/graph_program.h"
#include "aotgrad/npy.h"
#include "torch_peer.h"

namespace {

using torch_peer::now_ms;

// CPU time of this process (all threads), ms: on a shared, oversubscribed machine the wall clock
// mostly measures the other sessions.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

std::vector<size_t> parse_indices(const std::string& text) {
  std::vector<size_t> out;
  if (text == "-") return out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    if (end > start) out.push_back(std::stoul(text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

// base0.npy, base1.npy, ... until the first missing one.
std::vector<aotgrad::Tensor> read_numbered(const std::string& dir, const std::string& base) {
  std::vector<aotgrad::Tensor> out;
  for (size_t i = 0;; ++i) {
    const std::string path = dir + "/" + base + std::to_string(i) + ".npy";
    if (!std::filesystem::exists(path)) return out;
    out.push_back(aotgrad::read_npy(path));
  }
}

int run(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: graph_step_bench DIR NO_GRAD STEPS [PARTITIONER]\n");
    return 2;
  }
  const std::string dir = argv[1];
  const int steps = std::max(1, std::atoi(argv[3]));
  aotgrad::GraphRunOptions options{.backward = true,
                                   .partitioner = argc > 4 ? argv[4] : "default",
                                   .no_grad = parse_indices(argv[2])};
  double c0 = cpu_ms();
  aotgrad::GraphProgram p = aotgrad::GraphProgram::load(dir + "/graph.txt");
  const double load = cpu_ms() - c0;
  c0 = cpu_ms();
  const std::vector<aotgrad::Tensor> inputs = read_numbered(dir, "input");
  const std::vector<aotgrad::Tensor> tangents = read_numbered(dir, "tangent");
  const double read = cpu_ms() - c0;
  c0 = cpu_ms();
  p.run(inputs, options, tangents);
  const double first = cpu_ms() - c0;
  std::vector<double> times, cpu;
  for (int i = 0; i < steps; ++i) {
    const double t0 = now_ms();
    c0 = cpu_ms();
    p.run(inputs, options, tangents);
    cpu.push_back(cpu_ms() - c0);
    times.push_back(now_ms() - t0);
  }
  std::printf(
      "load_cpu=%.3f read_cpu=%.3f first_cpu=%.3f step_min=%.3f step_median=%.3f "
      "step_cpu_min=%.3f\n",
      load, read, first, torch_peer::min_of(times), torch_peer::median_of(times),
      torch_peer::min_of(cpu));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "graph_step_bench: %s\n", e.what());
    return 1;
  }
}
