#include "aot/capture.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "aotgrad/autograd.h"
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
      // A root-like output is its storage's own tensor in eager terms: the root, or the root after
      // t_() / as_strided_() (a new geometry, still no _base). Eager returns it as a plain tensor,
      // and views made from its current geometry as views of it.
      auto root_like = [&](size_t p) { return states[p]->chain.empty() || !outs[p].is_view(); };
      size_t aliases = 0;
      int root_output = -1;
      std::vector<trace::ViewStep> from_root;
      for (size_t p = 0; p < outs.size(); ++p) {
        if (!states[p] || states[p]->storage != ts->storage) continue;
        ++aliases;
        if (root_output >= 0 || p == o || !root_like(p)) continue;
        const std::vector<trace::ViewStep>& pc = states[p]->chain;
        const std::vector<trace::ViewStep>& oc = ts->chain;
        bool derived = pc.empty() ||
                       (outs[o]._base().is_same(outs[p]) && oc.size() > pc.size() &&
                        std::equal(pc.begin(), pc.end(), oc.begin(),
                                   [](const auto& a, const auto& b) { return a.op == b.op; }));
        if (!derived) continue;
        root_output = static_cast<int>(p);
        from_root.assign(oc.begin() + static_cast<std::ptrdiff_t>(pc.size()), oc.end());
      }
      if (root_like(o)) {
        as_value(OutputType::non_alias);
      } else if (aliases == 1) {
        as_value(OutputType::unsafe_view_alias);
      } else if (root_output >= 0) {
        info.type = OutputType::alias_of_intermediate_base_is_user_output;
        info.base = root_output;
        info.view_chain = std::move(from_root);
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

// requires_grad_() inside the function flips only a fake's flag: the graph was traced without it
// and the caller's tensor would not change. Refused rather than answered wrongly.
void check_requires_grad_unchanged(trace::Tracer& tracer, const std::vector<Tensor>& inputs,
                                   const InputPlan& plan, const std::vector<Tensor>& user_fakes,
                                   const std::vector<Tensor>& outs, const std::string& fn_name) {
  // An in-place op with an operand that requires grad legitimately makes an input require grad;
  // then its current value does too.
  for (size_t i = 0; i < inputs.size(); ++i)
    if (plan.inputs[i].kind == InputPlan::Kind::plain &&
        user_fakes[i].requires_grad() != tracer.requires_grad(tracer.value_of(user_fakes[i], "input")))
      throw trace::UnsupportedError(
          fn_name + ": the function called requires_grad_() on input " + std::to_string(i) +
          "; aot_function cannot change an input's requires_grad. Call requires_grad_() on it "
          "before calling the compiled function.");
  for (size_t o = 0; o < outs.size(); ++o)
    if (tracer.traced_here(outs[o]) &&
        outs[o].requires_grad() != tracer.requires_grad(tracer.value_of(outs[o], "output")))
      throw trace::UnsupportedError(
          fn_name + ": output " + std::to_string(o) + " had requires_grad_() called on it inside "
          "the function, which aot_function cannot trace. Return it as is and call "
          "requires_grad_() on the result, or make it a function input that requires grad.");
}

// Inputs whose fake ended the trace with another geometry than the caller's tensor (t_,
// as_strided_, ...). Changes that cancel out (t_ twice) are not mutations, as in PyTorch.
void record_metadata_mutations(const trace::Tracer& tracer, const std::vector<Tensor>& inputs,
                               const InputPlan& plan, const std::vector<Tensor>& user_fakes,
                               ViewAndMutationMeta& meta) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputPlan::Entry& e = plan.inputs[i];
    const Tensor& f = user_fakes[i];
    if (e.kind == InputPlan::Kind::duplicate) continue;  // the same tensor as input e.index
    trace::Tracer::MetadataTouch touch = tracer.metadata_touch(f);
    if (!touch.touched) continue;
    bool changed = f.sizes() != inputs[i].sizes() || f.strides() != inputs[i].strides() ||
                   f.storage_offset() != inputs[i].storage_offset();
    meta.metadata_mutations.push_back(
        {i, changed, f.sizes(), f.strides(), f.storage_offset(), touch.under_grad});
    if (changed && e.kind == InputPlan::Kind::plain) meta.input_info[e.index].mutates_metadata = true;
  }
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
  c.node_budgets = tracer.node_budgets();
  ViewAndMutationMeta& meta = c.meta;
  meta.keep_input_mutations = config.keep_inference_input_mutations;
  check_requires_grad_unchanged(tracer, inputs, plan, user_fakes, outs, config.name);
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
  for (const InputPlan::Unmergeable& u : plan.unmergeable)
    for (size_t m : u.members)
      if (meta.input_info[plan.inputs[m].index].mutates_data) throw trace::UnsupportedError(u.reason);
  record_metadata_mutations(tracer, inputs, plan, user_fakes, meta);
  // A mutation under no_grad or through detach() is invisible to autograd: alone it needs no
  // training graph (the value is still written back, without history).
  for (size_t k = 0; k < mutated_values.size(); ++k) {
    const InputAliasInfo& info = meta.input_info[meta.mutated_inputs[k]];
    bool visible = !info.mutations_under_no_grad && !info.mutations_hidden_from_autograd;
    c.needs_autograd = c.needs_autograd || (visible && tracer.requires_grad(mutated_values[k]));
  }
  for (graph::ValueId v : out_plan.user_values) c.needs_autograd = c.needs_autograd || tracer.requires_grad(v);
  for (graph::ValueId v : out_plan.bases) c.needs_autograd = c.needs_autograd || tracer.requires_grad(v);

  // Eager's leaf now has the new geometry, and so has its gradient; the training graph's
  // gradient for the input has the old one. Refused rather than accumulated with the wrong shape.
  for (const MetadataMutation& m : meta.metadata_mutations)
    if (c.needs_autograd && m.changed && !m.under_grad && inputs[m.input].is_leaf() &&
        inputs[m.input].requires_grad())
      throw trace::UnsupportedError(
          config.name + ": input " + std::to_string(m.input) + " is a leaf that requires grad "
          "and had its geometry changed in place under no_grad (t_, transpose_, as_strided_, ...); "
          "aot_function cannot give its gradient the new geometry. Change the geometry before "
          "the call.");
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
