// A custom compiler in a few lines (docs/compilers.md): it counts the nodes of each graph it is
// given, per op, prints the counts, and delegates the actual compiling to the registered
// "interpreter". Registered by name, so AotConfig::fw_compiler (or the CLI) can select it.
//
//   ./build/counting_compiler
#include <cstdio>
#include <map>
#include <string>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

ag::CompiledGraphFn counting_compiler(const ag::GraphView& graph) {
  std::map<std::string, int> per_op;
  for (const ag::NodeView& node : graph.nodes()) ++per_op[std::string(node.op())];
  std::printf("%s graph: %zu inputs, %zu nodes, %zu outputs\n", graph.name().c_str(),
              graph.num_inputs(), graph.num_nodes(), graph.num_outputs());
  for (const auto& [op, count] : per_op) std::printf("  %3d  %s\n", count, op.c_str());
  return ag::compile_with("interpreter", graph);
}

}  // namespace

int main() {
  ag::register_compiler("counting", counting_compiler);
  ag::AotConfig config;
  config.fw_compiler = "counting";  // the backward graph goes to the same compiler
  auto step = ag::aot_function(
      [](const Tensor& x, const Tensor& w) { return ag::mm(x, w).tanh().sum(); }, config);
  Tensor x = ag::ones({4, 3}).requires_grad_();
  Tensor w = ag::ones({3, 2}).requires_grad_();
  Tensor loss = step(x, w);
  loss.backward();
  std::printf("loss %.6f, sum of dloss/dw %.6f\n", loss.item<float>(),
              w.grad().sum().item<float>());
  return 0;
}
