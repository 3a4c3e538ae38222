#include "backends/interpreter.h"

#include <memory>
#include <stdexcept>

#include "tensor/current_op.h"

namespace aotgrad::backends {
namespace {

struct Program {
  struct Step {
    const ops::OpDef* op;
    ops::OpArgs args;  // constants filled in; each call copies it and fills the tensor slots
    std::vector<std::pair<size_t, uint32_t>> tensor_slots;         // (arg index, value)
    std::vector<std::tuple<size_t, size_t, uint32_t>> list_slots;  // (arg, element, value)
    std::vector<uint32_t> outputs;
    std::vector<uint32_t> free_after;  // values whose last use is this step
    int written_arg = -1;              // in-place op into a graph input: bump its version counter
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
  // Last use of each value: step index, or steps.size() when it is a graph output.
  std::vector<int64_t> last_use(g.values().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const graph::NodeArg& a : g.nodes()[i].args)
      for (graph::ValueId v : graph::arg_values(a)) last_use[v.index] = static_cast<int64_t>(i);
  for (graph::ValueId v : g.outputs()) last_use[v.index] = static_cast<int64_t>(g.nodes().size());
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const graph::Node& n = g.nodes()[i];
    Program::Step s;
    s.op = n.op;
    if (n.op->is_inplace()) {
      // The only mutation a graph may hold: a write into one of its inputs (an input mutation
      // kept in the graph).
      const auto* target = std::get_if<graph::ValueId>(&n.args.at(n.op->mutated_arg()));
      if (!target || g.value(*target).producer >= 0)
        throw std::invalid_argument("interpreter backend: graph " + g.name() +
                                    " mutates a value that is not a graph input (" +
                                    std::string(n.op->name) + "); graphs must be functional");
      s.written_arg = n.op->mutated_arg();
    }
    for (size_t k = 0; k < n.args.size(); ++k) {
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, graph::ValueId>) {
              s.args.emplace_back(Tensor());
              s.tensor_slots.emplace_back(k, x.index);
            } else if constexpr (std::is_same_v<T, graph::ValueList>) {
              s.args.emplace_back(ops::TensorList(x.size()));
              for (size_t e = 0; e < x.size(); ++e)
                if (x[e] != graph::kNoValue) s.list_slots.emplace_back(k, e, x[e].index);
            } else {
              s.args.emplace_back(x);
            }
          },
          n.args[k]);
    }
    for (graph::ValueId o : n.outputs) s.outputs.push_back(o.index);
    prog->steps.push_back(std::move(s));
  }
  // Values dead on arrival are dropped at once (values of removed nodes are never touched).
  for (graph::ValueId v : g.inputs())
    if (last_use[v.index] < 0) prog->free_at_start.push_back(v.index);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (graph::ValueId v : g.nodes()[i].outputs) {
      int64_t last = last_use[v.index];
      if (last < static_cast<int64_t>(prog->steps.size()))
        prog->steps[last < 0 ? i : last].free_after.push_back(v.index);
    }
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
    std::string expected = std::string(dtype_name(v.meta.dtype)) + shape_to_string(v.meta.sizes);
    if (!inputs[i].defined())
      throw std::invalid_argument("input " + std::to_string(i) + " (%" + v.name + ") of graph '" +
                                  g.name() + "' is undefined; expected " + expected);
    if (inputs[i].is_fake())
      throw std::invalid_argument("input " + std::to_string(i) + " (%" + v.name + ") of graph '" +
                                  g.name() + "' is a fake tensor (no data); pass a real " +
                                  expected + " tensor");
    if (inputs[i].dtype() != v.meta.dtype || inputs[i].sizes() != v.meta.sizes)
      throw std::invalid_argument("input " + std::to_string(i) + " (%" + v.name + ") of graph '" +
                                  g.name() + "': expected " + expected + ", got " +
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
      ops::OpArgs args = s.args;
      for (auto [arg, v] : s.tensor_slots) args[arg] = slots[v];
      for (auto [arg, e, v] : s.list_slots) std::get<ops::TensorList>(args[arg])[e] = slots[v];
      CurrentOpScope scope(s.op->name);  // errors from allocation and size checks name the op
      std::vector<Tensor> outs = s.op->kernel(args);
      if (s.written_arg >= 0) std::get<Tensor>(args[s.written_arg]).storage()->bump_version();
      for (size_t k = 0; k < s.outputs.size(); ++k) slots[s.outputs[k]] = std::move(outs[k]);
      // `args` dies here, dropping its references, so dead values are freed at once.
      for (uint32_t v : s.free_after) slots[v] = Tensor();
    }
    std::vector<Tensor> result;
    result.reserve(prog->outputs.size());
    for (uint32_t v : prog->outputs) result.push_back(slots[v]);
    return result;
  };
}

}  // namespace aotgrad::backends
