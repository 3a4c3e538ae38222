// Helpers for the partitioner tests: trace a function into a joint graph, partition it, and
// check a compiled function with a given AotConfig against eager (compare.h's helper uses the
// default config).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "aot/joint.h"
#include "aotgrad/aotgrad.h"
#include "aotgrad/memory_budget.h"
#include "partition/memory_budget.h"
#include "partition/min_cut.h"
#include "testing/compare.h"
#include "trace/tracer.h"

namespace aotgrad::testing {

using FlatLoss = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

struct TracedJoint {
  aot::JointGraph joint;
  std::vector<double> node_budgets;  // by joint node, from MemoryBudgetGuards in `fn`

  partition::JointInfo info() const {
    return {joint.num_primals, joint.num_fw_outputs, node_budgets};
  }
};

// Traces `fn` on fake copies of `examples` (their metadata and requires_grad) and builds the
// joint graph, as aot_function's pipeline does.
inline TracedJoint trace_joint(const FlatLoss& fn, const std::vector<Tensor>& examples) {
  graph::Graph fw("forward");
  trace::Tracer tracer(fw);
  std::vector<Tensor> outs;
  {
    ops::InterpreterGuard trace_guard(tracer);  // the tracer notes MemoryBudgetGuard regions
    std::vector<Tensor> fakes;
    for (size_t i = 0; i < examples.size(); ++i)
      fakes.push_back(tracer.add_input(examples[i], "arg" + std::to_string(i)));
    outs = fn(fakes);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    fw.add_output(tracer.value_of(outs[i], "output"), Descriptor::output(int64_t(i)));
  std::vector<bool> rg;
  for (uint32_t v = 0; v < fw.values().size(); ++v)
    rg.push_back(tracer.requires_grad(graph::ValueId{v}));
  TracedJoint t{aot::build_joint(fw, rg), tracer.node_budgets()};
  return t;
}

inline size_t activation_bytes(const partition::Partition& p) {
  size_t total = 0;
  for (const partition::SavedValue& s : p.saved)
    if (s.primal_index < 0) total += s.bytes;
  return total;
}

inline partition::Partition min_cut(const TracedJoint& t, double budget) {
  return partition::min_cut_partition(t.joint.graph, t.info(),
                                      {.activation_memory_budget = budget});
}

// compare.h's expect_compiled_matches_eager with a given config, for flat functions. The random
// generator is reseeded before each side runs so random ops draw the same numbers.
inline CompiledGraphs expect_matches_eager_with(const FlatLoss& fn, const std::vector<Tensor>& args,
                                                const AotConfig& config,
                                                Tolerances tol = kF32Tolerances) {
  namespace cd = compare_detail;
  std::vector<Tensor> eager_in, compiled_in;
  for (const Tensor& t : args) {
    eager_in.push_back(cd::fresh_leaf(t));
    compiled_in.push_back(cd::fresh_leaf(t));
  }
  auto compiled_fn = aot_function([fn](const std::vector<Tensor>& in) { return fn(in); }, config);
  std::vector<Tensor> eager_out, compiled_out;
  try {
    manual_seed(7);
    eager_out = fn(eager_in);
    manual_seed(7);
    compiled_out = compiled_fn(compiled_in);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw: " << e.what();
    return {};
  }
  CompiledGraphs graphs = compiled_fn.graphs();
  EXPECT_EQ(compiled_out.size(), eager_out.size());
  for (size_t i = 0; i < eager_out.size() && i < compiled_out.size(); ++i)
    cd::expect_same_tensor(compiled_out[i], eager_out[i], "output " + std::to_string(i), tol, true);
  cd::backward_from(eager_out, "eager", "");
  cd::backward_from(compiled_out, "compiled", "\nbackward graph:\n" + graphs.backward);
  for (size_t i = 0; i < args.size(); ++i)
    cd::expect_same_tensor(compiled_in[i].grad(), eager_in[i].grad(),
                           "grad of input " + std::to_string(i), tol, false);
  cd::expect_graph_text_round_trips(graphs.forward, "forward");
  cd::expect_graph_text_round_trips(graphs.backward, "backward");
  return graphs;
}

}  // namespace aotgrad::testing
