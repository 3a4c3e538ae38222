#include "aot/graph_function.h"

#include <stdexcept>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "ops/op.h"

namespace aotgrad::aot {
namespace {

// ATen's native_batch_norm writes the running statistics in training although its schema hides
// it (ops/conv.cpp). A hidden write is invisible to the tracer, so a graph node of it is run as
// the functional row plus copy_ of the new statistics under no_grad — what aotgrad's own
// batch_norm() does — which functionalization sees as the input mutation it is.
bool writes_running_stats(const graph::Graph&, const graph::Node& n) {
  static const ops::OpDef& native = ops::lookup("aten.native_batch_norm.default");
  if (n.op != &native) return false;
  const bool* training = std::get_if<bool>(&n.args.at(5));
  return training && *training && std::holds_alternative<graph::ValueId>(n.args.at(3)) &&
         std::holds_alternative<graph::ValueId>(n.args.at(4));
}

std::vector<Tensor> run_batch_norm_with_stats(ops::OpArgs args) {
  static const ops::OpDef& functional =
      ops::lookup("aten._native_batch_norm_legit_functional.default");
  Tensor mean = std::get<Tensor>(args[3]), var = std::get<Tensor>(args[4]);
  std::vector<Tensor> r = ops::dispatch(functional, std::move(args));
  NoGradGuard no_grad;
  copy_(mean, r[3]);
  copy_(var, r[4]);
  return {r[0], r[1], r[2]};
}

// The graph input `v` is a view of (following view ops back), or -1 when it is none's.
int64_t root_input(const graph::Graph& g, graph::ValueId v) {
  for (;;) {
    const graph::Value& val = g.value(v);
    if (val.producer < 0) {
      for (size_t i = 0; i < g.inputs().size(); ++i)
        if (g.inputs()[i].index == v.index) return static_cast<int64_t>(i);
      return -1;
    }
    const graph::Node& n = g.nodes()[static_cast<size_t>(val.producer)];
    // A view op's result, or an in-place op's (which is its mutated argument), aliases that
    // argument.
    int arg = n.op->is_inplace() ? n.op->mutated_arg() : n.op->view_of_arg();
    if (arg < 0 || static_cast<size_t>(arg) >= n.args.size()) return -1;
    const auto* base = std::get_if<graph::ValueId>(&n.args[static_cast<size_t>(arg)]);
    if (!base) return -1;
    v = *base;
  }
}

}  // namespace

bool has_mutation(const graph::Graph& g) {
  for (const graph::Node& n : g.nodes())
    if (n.op->is_inplace() || writes_running_stats(g, n)) return true;
  return false;
}

std::vector<bool> written_inputs(const graph::Graph& g) {
  std::vector<bool> written(g.inputs().size(), false);
  for (const graph::Node& n : g.nodes()) {
    if (writes_running_stats(g, n)) {
      for (size_t arg : {3, 4}) {
        int64_t i = root_input(g, std::get<graph::ValueId>(n.args[arg]));
        if (i >= 0) written[static_cast<size_t>(i)] = true;
      }
      continue;
    }
    if (!n.op->is_inplace()) continue;
    const auto* target = std::get_if<graph::ValueId>(&n.args.at(n.op->mutated_arg()));
    if (!target) continue;
    int64_t i = root_input(g, *target);
    if (i >= 0) written[static_cast<size_t>(i)] = true;
  }
  return written;
}

FlatFn graph_as_function(std::shared_ptr<const graph::Graph> g) {
  return [g](const std::vector<Tensor>& inputs) {
    if (inputs.size() != g->inputs().size())
      throw std::invalid_argument("graph '" + g->name() + "' takes " +
                                  std::to_string(g->inputs().size()) + " inputs, got " +
                                  std::to_string(inputs.size()));
    std::vector<Tensor> values(g->values().size());
    for (size_t i = 0; i < inputs.size(); ++i) values[g->inputs()[i].index] = inputs[i];
    for (const graph::Node& n : g->nodes()) {
      ops::OpArgs args;
      args.reserve(n.args.size());
      for (const graph::NodeArg& a : n.args)
        std::visit(
            [&](const auto& x) {
              using T = std::decay_t<decltype(x)>;
              if constexpr (std::is_same_v<T, graph::ValueId>) {
                args.emplace_back(values[x.index]);
              } else if constexpr (std::is_same_v<T, graph::ValueList>) {
                ops::TensorList list;
                for (graph::ValueId v : x)
                  list.push_back(v == graph::kNoValue ? Tensor() : values[v.index]);
                args.emplace_back(std::move(list));
              } else {
                args.emplace_back(x);
              }
            },
            a);
      std::vector<Tensor> outs = writes_running_stats(*g, n)
                                     ? run_batch_norm_with_stats(std::move(args))
                                     : ops::dispatch(*n.op, std::move(args));
      if (outs.size() < n.outputs.size())
        throw std::logic_error("graph '" + g->name() + "': " + std::string(n.op->name) +
                               " returned fewer results than the node binds");
      for (size_t k = 0; k < n.outputs.size(); ++k) values[n.outputs[k].index] = outs[k];
    }
    std::vector<Tensor> result;
    for (graph::ValueId v : g->outputs()) result.push_back(values[v.index]);
    return result;
  };
}

}  // namespace aotgrad::aot
