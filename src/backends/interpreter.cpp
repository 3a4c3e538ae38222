#include "backends/interpreter.h"

#include <memory>
#include <stdexcept>

#include "backends/liveness.h"
#include "backends/node_call.h"

namespace aotgrad::backends {
namespace {

struct Program {
  struct Step {
    NodeCall call;
    std::vector<uint32_t> free_after;  // values whose last use is this step
  };
  size_t num_values = 0;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> free_at_start;  // inputs never used
  std::vector<Step> steps;
  std::vector<uint32_t> outputs;
};

std::shared_ptr<Program> build(const graph::Graph& g) {
  auto prog = std::make_shared<Program>();
  prog->num_values = g.values().size();
  for (graph::ValueId v : g.inputs()) prog->inputs.push_back(v.index);
  for (graph::ValueId v : g.outputs()) prog->outputs.push_back(v.index);
  std::vector<StepValues> uses;
  for (const graph::Node& n : g.nodes()) {
    prog->steps.push_back({make_node_call(g, n, "interpreter"), {}});
    uses.push_back({node_reads(n), prog->steps.back().call.outputs});
  }
  Liveness live = compute_liveness(g, uses);
  prog->free_at_start = std::move(live.free_at_start);
  for (size_t i = 0; i < prog->steps.size(); ++i)
    prog->steps[i].free_after = std::move(live.free_after[i]);
  return prog;
}

}  // namespace

void check_inputs(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  if (inputs.size() != g.inputs().size())
    throw std::invalid_argument("compiled graph '" + g.name() + "' takes " +
                                std::to_string(g.inputs().size()) + " inputs, got " +
                                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const graph::Value& v = g.value(g.inputs()[i]);
    // Built only for a message: the per-call path allocates no strings.
    auto expected = [&] {
      return std::string(dtype_name(v.meta.dtype)) + shape_to_string(v.meta.sizes);
    };
    if (!inputs[i].defined())
      throw std::invalid_argument("input " + std::to_string(i) + " (%" + v.name + ") of graph '" +
                                  g.name() + "' is undefined; expected " + expected());
    if (inputs[i].is_fake())
      throw std::invalid_argument("input " + std::to_string(i) + " (%" + v.name + ") of graph '" +
                                  g.name() + "' is a fake tensor (no data); pass a real " +
                                  expected() + " tensor");
    if (inputs[i].dtype() != v.meta.dtype || inputs[i].sizes() != v.meta.sizes)
      throw std::invalid_argument("input " + std::to_string(i) + " (%" + v.name + ") of graph '" +
                                  g.name() + "': expected " + expected() + ", got " +
                                  std::string(dtype_name(inputs[i].dtype())) +
                                  shape_to_string(inputs[i].sizes()));
  }
}

CompiledGraph compile_interpreter(const graph::Graph& g) {
  std::shared_ptr<const Program> prog = build(g);
  auto signature = std::make_shared<const graph::Graph>(g);
  // Reentrant: the program and signature are read-only; value slots and each step's argument
  // vector (its constants copied from the program) belong to the call.
  return [prog, signature](std::vector<Tensor>&& inputs) {
    check_inputs(*signature, inputs);
    std::vector<Tensor> slots(prog->num_values);
    for (size_t i = 0; i < prog->inputs.size(); ++i) slots[prog->inputs[i]] = std::move(inputs[i]);
    inputs.clear();
    for (uint32_t v : prog->free_at_start) slots[v] = Tensor();
    for (const Program::Step& s : prog->steps) {
      run_node_call(s.call, slots);
      for (uint32_t v : s.free_after) slots[v] = Tensor();
    }
    std::vector<Tensor> result;
    result.reserve(prog->outputs.size());
    for (uint32_t v : prog->outputs) result.push_back(slots[v]);
    return result;
  };
}

}  // namespace aotgrad::backends
