#include "aot/capture.h"

#include <map>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "partition/memory_budget.h"
#include "trace/tracer.h"

namespace aotgrad::aot {
namespace {

std::string describe_inputs(const std::vector<Tensor>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (i ? ", " : "") + std::string(dtype_name(inputs[i].dtype())) +
         shape_to_string(inputs[i].sizes());
  return s;
}

// The fake tensors the user function sees, one per user input, following the plan.
std::vector<Tensor> make_user_fakes(trace::Tracer& tracer, const std::vector<Tensor>& inputs,
                                    const InputPlan& plan, const std::vector<Tensor>& graph_inputs) {
  std::vector<Tensor> graph_fakes;
  for (size_t g = 0; g < plan.graph_inputs.size(); ++g) {
    const InputPlan::GraphInput& gi = plan.graph_inputs[g];
    std::string desc = gi.is_base ? "synthetic_base(" + std::to_string(gi.index) + ")"
                                  : "input(" + std::to_string(gi.index) + ")";
    graph_fakes.push_back(tracer.add_input(graph_inputs[g], "arg" + std::to_string(g), desc));
  }
  std::vector<size_t> graph_input_of_base(plan.bases.size());
  for (size_t g = 0; g < plan.graph_inputs.size(); ++g)
    if (plan.graph_inputs[g].is_base) graph_input_of_base[plan.graph_inputs[g].index] = g;
  std::vector<Tensor> fakes(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputPlan::Entry& e = plan.inputs[i];
    if (e.kind == InputPlan::Kind::plain) fakes[i] = graph_fakes[e.index];
    else if (e.kind == InputPlan::Kind::duplicate) fakes[i] = fakes[e.index];
    else
      fakes[i] = tracer.add_strided_view(graph_fakes[graph_input_of_base[e.index]], inputs[i].sizes(),
                                         inputs[i].strides(), inputs[i].storage_offset(),
                                         inputs[i].requires_grad());
  }
  return fakes;
}

struct OutputPlan {
  std::vector<graph::ValueId> user_values;  // non-aliased user outputs, in graph order
  std::vector<graph::ValueId> bases;        // intermediate bases
};

// Classifies every user output (ViewAndMutationMeta::output_info) and collects the values the
// forward graph must return for them.
OutputPlan classify_outputs(trace::Tracer& tracer, const std::vector<Tensor>& user_fakes,
                            const std::vector<Tensor>& outs, ViewAndMutationMeta& meta) {
  OutputPlan plan;
  std::vector<graph::ValueId> values;
  std::vector<const trace::TensorState*> states;
  for (size_t o = 0; o < outs.size(); ++o) {
    values.push_back(tracer.value_of(outs[o], "output " + std::to_string(o)));
    states.push_back(tracer.state_of(outs[o]));
  }
  std::map<size_t, int> base_of_storage;
  for (size_t o = 0; o < outs.size(); ++o) {
    OutputAliasInfo info;
    info.requires_grad = tracer.requires_grad(values[o]);
    const trace::TensorState* ts = states[o];
    const trace::StorageState* s = ts ? &tracer.storages()[ts->storage] : nullptr;
    auto as_value = [&](OutputType type) {
      info.type = type;
      info.graph_output = static_cast<int>(plan.user_values.size());
      plan.user_values.push_back(values[o]);
    };
    if (!ts) {
      as_value(OutputType::non_alias);
    } else if (s->input_index >= 0) {
      int same = -1;
      for (size_t u = 0; u < user_fakes.size() && same < 0; ++u)
        if (user_fakes[u].is_same(outs[o])) same = static_cast<int>(u);
      if (same >= 0) {
        info.type = OutputType::is_input;
        info.base = same;
      } else {
        info.type = OutputType::alias_of_input;
        info.base = s->input_index;
        info.view_chain = ts->chain;
      }
    } else {
      size_t aliases = 0;
      int root_output = -1;
      for (size_t p = 0; p < outs.size(); ++p) {
        if (!states[p] || states[p]->storage != ts->storage) continue;
        ++aliases;
        if (states[p]->chain.empty() && root_output < 0) root_output = static_cast<int>(p);
      }
      if (ts->chain.empty()) {
        as_value(OutputType::non_alias);
      } else if (aliases == 1) {
        as_value(OutputType::unsafe_view_alias);
      } else if (root_output >= 0) {
        info.type = OutputType::alias_of_intermediate_base_is_user_output;
        info.base = root_output;
        info.view_chain = ts->chain;
      } else {
        auto [it, fresh] = base_of_storage.emplace(ts->storage, static_cast<int>(plan.bases.size()));
        if (fresh) plan.bases.push_back(s->root);
        info.type = fresh ? OutputType::alias_of_intermediate_save_as_output
                          : OutputType::alias_of_intermediate;
        info.base = it->second;
        info.view_chain = ts->chain;
      }
    }
    meta.output_info.push_back(std::move(info));
  }
  return plan;
}

}  // namespace

CapturedForward capture_forward(const FlatFn& fn, const std::vector<Tensor>& inputs,
                                const InputPlan& plan, const std::vector<Tensor>& graph_inputs,
                                const AotConfig& config) {
  CapturedForward c;
  trace::Tracer tracer(c.graph);
  std::vector<Tensor> outs;
  std::vector<Tensor> user_fakes;
  try {
    ops::InterpreterGuard guard(tracer);
    user_fakes = make_user_fakes(tracer, inputs, plan, graph_inputs);
    outs = fn(user_fakes);
  } catch (const trace::UnsupportedError&) {
    throw;
  } catch (const std::runtime_error&) {
    throw;  // eager's own errors (in-place on a leaf, ...) keep their type and message
  } catch (const std::exception& e) {
    throw std::invalid_argument(config.name + ": tracing failed for inputs (" +
                                describe_inputs(inputs) + "): " + e.what());
  }
  c.node_budgets = partition::take_node_budgets(c.graph);
  ViewAndMutationMeta& meta = c.meta;
  meta.keep_input_mutations = config.keep_inference_input_mutations;
  OutputPlan out_plan = classify_outputs(tracer, user_fakes, outs, meta);

  // Mutated graph inputs, and whether anything the caller gets needs autograd.
  std::vector<graph::ValueId> mutated_values;
  for (size_t g = 0; g < graph_inputs.size(); ++g) {
    InputAliasInfo info;
    info.requires_grad = graph_inputs[g].requires_grad();
    info.is_leaf = graph_inputs[g].is_leaf();
    meta.input_info.push_back(info);
  }
  for (const trace::StorageState& s : tracer.storages()) {
    if (s.input_index < 0 || !s.mutated) continue;
    InputAliasInfo& info = meta.input_info[s.input_index];
    info.mutates_data = true;
    info.mutations_under_no_grad = s.all_mutations_under_no_grad;
    info.mutations_hidden_from_autograd = s.all_mutations_hidden && !s.all_mutations_under_no_grad;
    meta.mutated_inputs.push_back(static_cast<size_t>(s.input_index));
    mutated_values.push_back(s.root);
  }
  for (graph::ValueId v : mutated_values) c.needs_autograd = c.needs_autograd || tracer.requires_grad(v);
  for (graph::ValueId v : out_plan.user_values) c.needs_autograd = c.needs_autograd || tracer.requires_grad(v);
  for (graph::ValueId v : out_plan.bases) c.needs_autograd = c.needs_autograd || tracer.requires_grad(v);

  bool keep_in_graph = config.keep_inference_input_mutations && !c.needs_autograd;
  if (keep_in_graph) {
    const ops::OpDef& copy = ops::lookup("aten.copy_.default");
    for (size_t k = 0; k < meta.mutated_inputs.size(); ++k) {
      size_t g = meta.mutated_inputs[k];
      graph::ValueId input = c.graph.inputs()[g];
      c.graph.add_node(copy, {input, mutated_values[k], false}, {c.graph.value(input).meta});
      meta.input_info[g].keep_in_graph = true;
    }
  } else {
    for (size_t k = 0; k < mutated_values.size(); ++k)
      c.graph.add_output(mutated_values[k], "mutated_input(" + std::to_string(meta.mutated_inputs[k]) + ")");
  }
  for (size_t k = 0; k < out_plan.user_values.size(); ++k)
    c.graph.add_output(out_plan.user_values[k], "output(" + std::to_string(k) + ")");
  for (size_t k = 0; k < out_plan.bases.size(); ++k)
    c.graph.add_output(out_plan.bases[k], "intermediate_base(" + std::to_string(k) + ")");
  meta.num_user_graph_outputs = out_plan.user_values.size();
  meta.num_intermediate_bases = out_plan.bases.size();
  for (uint32_t v = 0; v < c.graph.values().size(); ++v)
    c.value_requires_grad.push_back(tracer.requires_grad(graph::ValueId{v}));
  c.backward_errors = tracer.backward_errors();
  return c;
}

}  // namespace aotgrad::aot
