// lower (aot/lower.h). Reading guide: lower() at the bottom is the pipeline, top to bottom; the
// two front ends (capture_traced, capture_loaded) each yield a CapturedForward and the guards;
// lower_inference and lower_training finish the Artifact.
#include "aot/lower.h"

#include <limits>

#include "aot/capture.h"
#include "aot/joint.h"
#include "aot/partition_fn.h"
#include "aot/tracing_state.h"
#include "aotgrad/autograd.h"
#include "graph/dce.h"
#include "graph/fuse_attention.h"
#include "ops/requires_grad.h"
#include "trace/decompose.h"

namespace aotgrad::aot {
namespace {

CapturedForward capture_traced(const TracedFunction& t, const AotConfig& config, Guards& guards) {
  guards.grad_mode = autograd::grad_mode_enabled();
  guards.key_extra = t.key_extra;
  guards.inputs = input_guards(t.inputs);
  guards.plan = plan_inputs(t.inputs, config.name);
  std::vector<Descriptor> descs = t.input_descs;
  if (descs.size() != t.inputs.size()) {
    descs.clear();
    for (size_t i = 0; i < t.inputs.size(); ++i) descs.push_back(Descriptor::input(int64_t(i)));
  }
  TracingScope tracing;
  CapturedForward c = capture_forward(t.fn, t.inputs, guards.plan, descs, config);
  // Where an input starts in its storage matters only to an as_strided on it (absolute offsets),
  // to the replay of a metadata mutation (as_strided_ to the recorded geometry) and to inputs
  // that overlap (members are rebuilt from their storage). Otherwise the specialization serves
  // inputs at any offset: batches sliced from one dataset tensor share it (PyTorch's guards
  // leave offsets out too).
  if (!c.reads_input_offsets && c.meta.metadata_mutations.empty() && guards.plan.trivial() &&
      guards.plan.unmergeable.empty())
    for (InputGuard& g : guards.inputs) g.storage_offset = kAnyStorageOffset;
  return c;
}

// The trivial plan: every input its own graph input.
InputPlan trivial_plan(size_t n) {
  InputPlan plan;
  for (size_t i = 0; i < n; ++i) {
    plan.inputs.push_back({InputPlan::Kind::plain, i});
    plan.graph_inputs.push_back({false, i});
  }
  return plan;
}

// A loaded graph is functional: no input mutation, and every output is its own value, except an
// output that is an input itself, which the runtime returns as the caller's tensor.
CapturedForward capture_loaded(const LoadedGraph& l, Guards& guards) {
  CapturedForward c;
  c.graph = l.forward;
  c.graph.set_name("forward");
  size_t n = c.graph.inputs().size();
  std::vector<bool> input_rg(n, false);
  for (size_t i = 0; i < n && i < l.requires_grad.size(); ++i) input_rg[i] = l.requires_grad[i];
  guards.grad_mode = true;
  guards.plan = trivial_plan(n);
  for (size_t i = 0; i < n; ++i) {
    const ops::TensorMeta& m = c.graph.value(c.graph.inputs()[i]).meta;
    guards.inputs.push_back({m.dtype, m.sizes, m.strides, m.storage_offset, input_rg[i]});
    if (c.graph.input_descs()[i].empty())
      c.graph.mutable_input_descs()[i] = Descriptor::input(static_cast<int64_t>(i));
    c.meta.input_info.push_back({.is_leaf = true, .requires_grad = input_rg[i]});
  }
  std::vector<graph::ValueId> outputs = c.graph.outputs();
  std::vector<Descriptor> descs = c.graph.output_descs();
  c.graph.mutable_outputs().clear();
  c.graph.mutable_output_descs().clear();
  c.value_requires_grad = values_requiring_grad(c.graph, input_rg);
  for (size_t o = 0; o < outputs.size(); ++o) {
    OutputAliasInfo info;
    info.requires_grad = c.value_requires_grad[outputs[o].index];
    const graph::Value& v = c.graph.value(outputs[o]);
    if (v.producer < 0) {
      info.type = OutputType::is_input;
      info.base = static_cast<int>(v.output_index);
    } else {
      info.graph_output = static_cast<int>(c.graph.outputs().size());
      c.graph.add_output(outputs[o], descs[o].empty() ? Descriptor::output(int64_t(o)) : descs[o]);
      c.needs_autograd = c.needs_autograd || info.requires_grad;
    }
    c.meta.output_info.push_back(std::move(info));
  }
  c.meta.num_user_graph_outputs = c.graph.outputs().size();
  return c;
}

// The attention pass (graph/fuse_attention.h) on the captured forward, keeping what is indexed by
// node (memory budgets) and by value (requires_grad) in step with the rewritten graph. Values the
// pass kept keep the trace's requires_grad (data flow alone cannot see a no_grad region or a
// detached leaf); a value it added requires grad where its inputs do and the composite's result
// (the node it stands for) did.
void fuse_attention(CapturedForward& c) {
  std::vector<graph::ValueId> first_output;  // of each node before the pass
  for (const graph::Node& n : c.graph.nodes())
    first_output.push_back(n.outputs.empty() ? graph::kNoValue : n.outputs[0]);
  const size_t old_values = c.value_requires_grad.size();
  graph::AttentionFusion f = graph::fuse_attention(c.graph);
  if (f.fused == 0) return;
  std::vector<double> budgets;
  for (size_t origin : f.origin)
    budgets.push_back(origin < c.node_budgets.size() ? c.node_budgets[origin]
                                                     : std::numeric_limits<double>::quiet_NaN());
  c.node_budgets = std::move(budgets);
  std::vector<bool>& rg = c.value_requires_grad;
  rg.resize(c.graph.values().size(), false);
  for (size_t i = 0; i < c.graph.nodes().size(); ++i) {
    const graph::Node& n = c.graph.nodes()[i];
    const graph::ValueId stands_for = first_output[f.origin[i]];
    const bool composite_rg = stands_for != graph::kNoValue && rg[stands_for.index];
    bool inputs_rg = false;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) inputs_rg = inputs_rg || rg[v.index];
    for (graph::ValueId o : n.outputs)
      if (o.index >= old_values)
        rg[o.index] = ops::result_requires_grad(*n.op, true, composite_rg && inputs_rg,
                                                c.graph.value(o).meta.dtype);
  }
}

void lower_inference(CapturedForward& c, Artifact& a, const GraphHook& on_graph) {
  a.is_inference = true;
  a.inference = std::move(c.graph);
  a.inference.set_name("inference");
  graph::eliminate_dead_code(a.inference);
  if (on_graph) on_graph("inference", a.inference);
}

// A backward node no VJP rule made recomputes a forward value (min_cut): it came from itself.
void mark_recomputed(graph::Graph& backward) {
  for (graph::Node& n : backward.mutable_nodes())
    if (n.origin.empty() && !n.outputs.empty()) n.origin = backward.value(n.outputs[0]).name;
}

// Forward outputs no gradient can reach, although they require grad: the runtime never connects
// them to a caller's autograd graph. The new value of an input written only under no_grad or
// through detach() (the epilogue copies it under no_grad), and an intermediate base whose aliases
// the caller gets all have no history through it (views made under no_grad, which eager makes
// require grad without a grad_fn; detach()ed aliases). Their tangents are always zero; flowing
// them would give the input a (zero) gradient eager never gives it, and count VJPs (with their
// saved values' version errors) that eager's backward never runs.
std::vector<bool> outputs_no_gradient_reaches(const ViewAndMutationMeta& meta,
                                          size_t num_forward_outputs) {
  std::vector<bool> none;
  for (size_t g : meta.mutated_inputs) {
    const InputAliasInfo& info = meta.input_info[g];
    if (info.keep_in_graph) continue;
    none.push_back(info.mutations_under_no_grad || info.mutations_hidden_from_autograd);
  }
  const size_t first_base = none.size() + meta.num_user_graph_outputs;
  none.resize(num_forward_outputs, false);
  std::vector<bool> base_reached(meta.num_intermediate_bases, false);
  for (const OutputAliasInfo& o : meta.output_info) {
    if (!o.requires_grad) continue;
    bool of_base = o.type == OutputType::alias_of_intermediate ||
                   o.type == OutputType::alias_of_intermediate_save_as_output;
    // A detach()ed alias with a history of its own takes its gradient there: its data base is
    // reached through the detach only (AliasedOutputs::Output::history).
    if (o.history_base >= 0)
      base_reached.at(static_cast<size_t>(o.history_base)) = true;
    else if (of_base)
      base_reached.at(static_cast<size_t>(o.base)) = true;
  }
  for (size_t k = 0; k < base_reached.size(); ++k)
    if (!base_reached[k]) none.at(first_base + k) = true;
  return none;
}

void lower_training(const CapturedForward& c, const AotConfig& config, Artifact& a,
                    const GraphHook& on_graph) {
  JointGraph joint =
      build_joint(c.graph, c.value_requires_grad, outputs_no_gradient_reaches(a.meta, c.graph.outputs().size()));
  for (const BackwardError& e : c.backward_errors)
    if (joint.vjp_ran[e.at.index]) {
      a.backward_error = e.message;
      break;
    }
  if (a.backward_error.empty()) a.backward_error = joint.vjp_error;
  if (on_graph) on_graph("joint", joint.graph);
  partition::Partition part =
      run_partition(config, joint.graph, {joint.num_primals, joint.num_fw_outputs, c.node_budgets});
  mark_recomputed(part.backward);
  if (on_graph) {
    on_graph("forward", part.forward);
    on_graph("backward", part.backward);
  }
  a.joint = std::move(joint.graph);
  a.forward = std::move(part.forward);
  a.backward = std::move(part.backward);
  a.tangent_of_output = std::move(joint.tangent_of_output);
  a.grad_of_primal = std::move(joint.grad_of_primal);
  a.saved = std::move(part.saved);
}

}  // namespace

std::vector<bool> values_requiring_grad(const graph::Graph& g,
                                        const std::vector<bool>& input_requires_grad) {
  std::vector<bool> rg(g.values().size(), false);
  for (size_t i = 0; i < g.inputs().size() && i < input_requires_grad.size(); ++i)
    rg[g.inputs()[i].index] = input_requires_grad[i];
  for (const graph::Node& n : g.nodes()) {
    bool any = false;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) any = any || rg[v.index];
    // Grad mode is on: input_requires_grad is all false for a run without it.
    for (graph::ValueId o : n.outputs)
      rg[o.index] = ops::result_requires_grad(*n.op, true, any, g.value(o).meta.dtype);
  }
  return rg;
}

Captured capture(const LowerInput& input, const AotConfig& config) {
  trace::DecompositionScope decompositions(config.decompositions);
  Captured c;
  Artifact& a = c.artifact;
  a.config = artifact_config(config);
  if (const auto* traced = std::get_if<TracedFunction>(&input))
    c.forward = capture_traced(*traced, config, a.guards);
  else
    c.forward = capture_loaded(std::get<LoadedGraph>(input), a.guards);
  a.meta = std::move(c.forward.meta);
  return c;
}

Artifact finish_lowering(Captured captured, const AotConfig& config, const GraphHook& on_graph) {
  trace::DecompositionScope decompositions(config.decompositions);  // VJPs are traced here
  Artifact a = std::move(captured.artifact);
  if (a.config.fuse_attention) fuse_attention(captured.forward);
  if (captured.forward.needs_autograd)
    lower_training(captured.forward, config, a, on_graph);
  else
    lower_inference(captured.forward, a, on_graph);
  return a;
}

Artifact lower(const LowerInput& input, const AotConfig& config, const GraphHook& on_graph) {
  return finish_lowering(capture(input, config), config, on_graph);
}

}  // namespace aotgrad::aot
