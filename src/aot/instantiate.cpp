// instantiate (aot/runtime.h): compiles an artifact's graphs and computes, once, every index list
// the runtime wrappers walk per call. Reading guide: instantiate() at the bottom is the whole
// recipe, outermost wrapper first; each helper above it builds one wrapper from the artifact.
#include <stdexcept>

#include "aot/runtime.h"
#include "aot/runtime_wrappers.h"

namespace aotgrad::aot {
namespace {

using Wrappers = std::vector<std::unique_ptr<const RuntimeWrapper>>;

// Dedupe and SyntheticBases for a plan that needs them (a trivial plan needs neither).
void add_input_wrappers(const InputPlan& plan, Wrappers& w) {
  std::vector<size_t> kept, position(plan.inputs.size(), 0);
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (plan.inputs[i].kind == InputPlan::Kind::duplicate) continue;
    position[i] = kept.size();
    kept.push_back(i);
  }
  if (kept.size() != plan.inputs.size()) w.push_back(std::make_unique<Dedupe>(kept));
  if (plan.bases.empty()) return;
  std::vector<SyntheticBases::Source> sources;
  for (const InputPlan::GraphInput& g : plan.graph_inputs) {
    using Kind = SyntheticBases::Source::Kind;
    if (!g.is_base) {
      sources.push_back({Kind::plain, position[g.index]});
      continue;
    }
    const SyntheticBase& b = plan.bases[g.index];
    sources.push_back(
        {b.common_base ? Kind::common_base : Kind::storage_view, position[b.members.front()]});
  }
  w.push_back(std::make_unique<SyntheticBases>(std::move(sources)));
}

size_t num_written_back(const ViewAndMutationMeta& m) {
  size_t n = 0;
  for (size_t g : m.mutated_inputs) n += m.input_info[g].keep_in_graph ? 0 : 1;
  return n;
}

std::vector<MutationEpilogue::Write> mutation_writes(const ViewAndMutationMeta& m,
                                                     const InputPlan& plan) {
  std::vector<MutationEpilogue::Write> writes;
  for (size_t g : m.mutated_inputs) {
    const InputAliasInfo& info = m.input_info[g];
    if (info.keep_in_graph) continue;
    MutationEpilogue::Write w;
    w.graph_input = g;
    w.output = writes.size();
    w.visible = !info.mutations_under_no_grad && !info.mutations_hidden_from_autograd;
    for (const MetadataMutation& mm : m.metadata_mutations) {
      const InputPlan::Entry& e = plan.inputs.at(mm.input);
      if (!mm.written_in_other_geometry || e.kind != InputPlan::Kind::plain || e.index != g)
        continue;
      w.in_other_geometry = true;
      w.geometry_recorded = !mm.runs.empty();
      w.sizes = mm.written_sizes;
      w.strides = mm.written_strides;
      w.storage_offset = mm.written_storage_offset;
    }
    writes.push_back(std::move(w));
  }
  return writes;
}

// Where each user output comes from. Graph outputs are (mutated inputs written back, non-aliased
// user outputs, intermediate bases).
std::unique_ptr<AliasedOutputs> aliased_outputs(const ViewAndMutationMeta& m) {
  using Kind = AliasedOutputs::Output::Kind;
  size_t first_user = num_written_back(m);
  size_t first_base = first_user + m.num_user_graph_outputs;
  std::vector<AliasedOutputs::Output> outputs;
  bool identity = first_user == 0 && m.num_intermediate_bases == 0 &&
                  m.num_user_graph_outputs == m.output_info.size();
  for (size_t o = 0; o < m.output_info.size(); ++o) {
    const OutputAliasInfo& info = m.output_info[o];
    AliasedOutputs::Output out;
    out.make_leaf = info.requires_grad_set_inside;
    auto base = static_cast<size_t>(info.base);
    switch (info.type) {
      case OutputType::non_alias:
      case OutputType::unsafe_view_alias:
        out.kind = Kind::graph_output;
        out.index = first_user + static_cast<size_t>(info.graph_output);
        out.plain_tensor = info.type == OutputType::non_alias;
        break;
      case OutputType::is_input:
        out.kind = Kind::user_input;
        out.index = base;
        break;
      case OutputType::alias_of_input:
        out.kind = info.from_input >= 0 ? Kind::alias_of_user_input : Kind::alias_of_graph_input;
        out.index = info.from_input >= 0 ? static_cast<size_t>(info.from_input) : base;
        break;
      case OutputType::alias_of_intermediate:
      case OutputType::alias_of_intermediate_save_as_output:
        out.kind = Kind::alias_of_graph_output;
        out.index = first_base + base;
        break;
      case OutputType::alias_of_intermediate_base_is_user_output:
        out.kind = Kind::alias_of_user_output;
        out.index = base;
        break;
    }
    if (out.kind != Kind::graph_output) out.chain = resolve(info.view_chain);
    if (info.from_input >= 0)
      out.chain.erase(out.chain.begin(), out.chain.begin() + info.from_input_step);
    if (info.history_base >= 0) {
      out.history = first_base + static_cast<size_t>(info.history_base);
      auto split = out.chain.begin() + info.history_step + 1;
      out.after_history.assign(split, out.chain.end());
      out.chain.erase(split, out.chain.end());
    }
    if (info.same_as >= 0) out.same_as = static_cast<size_t>(info.same_as);
    identity = identity && out.kind == Kind::graph_output && out.index == o && !out.make_leaf;
    outputs.push_back(std::move(out));
  }
  return std::make_unique<AliasedOutputs>(std::move(outputs), identity);
}

std::unique_ptr<AutogradBody> autograd_body(const Artifact& a, const Compilers& c,
                                            bool keep_graph_inputs) {
  AutogradBody::Spec s;
  s.num_outputs = a.forward.outputs().size() - a.saved.size();
  s.tangent_of_output = a.tangent_of_output;
  s.grad_of_primal = a.grad_of_primal;
  for (size_t k = 0; k < a.grad_of_primal.size(); ++k) {
    const IntList& grad = a.backward.value(a.backward.outputs()[k]).meta.sizes;
    if (grad != a.forward.value(a.forward.inputs()[a.grad_of_primal[k]]).meta.sizes)
      s.accumulator_sizes.emplace_back(k, grad);
  }
  for (size_t g : a.meta.mutated_inputs)
    if (!a.meta.input_info[g].keep_in_graph) s.written_inputs.push_back(g);
  // Read in place, written or sharing a written input's storage: either way passed as a copy.
  for (size_t g = 0; g < a.meta.input_info.size(); ++g)
    if (a.meta.input_info[g].read_in_place) s.whole_storage_inputs.push_back(g);
  s.keep_graph_inputs = keep_graph_inputs;
  auto bw = std::make_shared<BackwardSpec>();
  bw->saved = a.saved;
  for (size_t o : a.tangent_of_output)
    bw->tangent_metas.push_back(a.forward.value(a.forward.outputs()[o]).meta);
  bw->backward_error = a.backward_error;
  bw->fn_name = a.config.name;
  s.forward = c.forward(a.forward);
  bw->backward = c.backward(a.backward);
  s.backward = std::move(bw);
  return std::make_unique<AutogradBody>(std::move(s));
}

backends::Compiler or_default(const backends::Compiler& c, const backends::Compiler& fallback) {
  return c ? c : fallback;
}

}  // namespace

Compilers named_compilers(const ArtifactConfig& config) {
  const std::string& fw = config.fw_compiler.empty() ? default_compiler() : config.fw_compiler;
  Compilers c;
  c.forward = backends::compiler(fw);
  c.backward = backends::compiler(config.bw_compiler.empty() ? fw : config.bw_compiler);
  c.inference =
      backends::compiler(config.inference_compiler.empty() ? fw : config.inference_compiler);
  return c;
}

// The callables of AotConfig take precedence over the names beside them (aot.h).
Compilers named_compilers(const AotConfig& config) {
  Compilers c = named_compilers(artifact_config(config));
  if (config.fw_compiler_fn) c.forward = backends::over_ir(config.fw_compiler_fn);
  if (config.bw_compiler_fn)
    c.backward = backends::over_ir(config.bw_compiler_fn);
  else if (config.bw_compiler.empty())
    c.backward = c.forward;
  if (config.inference_compiler_fn)
    c.inference = backends::over_ir(config.inference_compiler_fn);
  else if (config.inference_compiler.empty())
    c.inference = c.forward;
  return c;
}

std::shared_ptr<const Runtime> instantiate(const Artifact& a, const Compilers& compilers) {
  const ViewAndMutationMeta& m = a.meta;
  Wrappers w;
  if (!m.input_requires_grad_changes.empty())
    w.push_back(std::make_unique<RequiresGradChanges>(m.input_requires_grad_changes));
  if (!m.metadata_mutations.empty()) {
    std::vector<size_t> current;
    std::vector<MetadataMutations::OwnViews> own;
    for (size_t o = 0; o < m.output_info.size(); ++o) {
      const OutputAliasInfo& info = m.output_info[o];
      if (info.made_after_metadata_mutation) current.push_back(o);
      if (info.own_views_of_input < 0) continue;
      std::vector<trace::ViewStep> chain = resolve(info.view_chain);
      chain.erase(chain.begin(), chain.begin() + info.own_views_from);
      own.push_back({o, static_cast<size_t>(info.own_views_of_input), std::move(chain),
                     info.requires_grad_set_inside, info.own_views_start_made_before,
                     info.start_sizes, info.start_strides, info.start_storage_offset});
    }
    w.push_back(std::make_unique<MetadataMutations>(m.metadata_mutations, std::move(current),
                                                    std::move(own)));
  }
  add_input_wrappers(a.guards.plan, w);
  w.push_back(aliased_outputs(m));
  std::vector<MutationEpilogue::Write> writes = mutation_writes(m, a.guards.plan);
  bool keep_graph_inputs = !writes.empty();
  for (const OutputAliasInfo& o : m.output_info)
    keep_graph_inputs = keep_graph_inputs || o.type == OutputType::alias_of_input;
  if (!writes.empty()) w.push_back(std::make_unique<MutationEpilogue>(std::move(writes)));
  // Innermost: RNG state and effect token inputs follow the plan's graph inputs
  // (aot/runtime_rng.cpp).
  if (auto state = graph_state_inputs(a.is_inference ? a.inference : a.forward,
                                      a.guards.plan.graph_inputs.size()))
    w.push_back(std::move(state));

  Compilers c = compilers;
  c.forward = or_default(c.forward, backends::compiler("interpreter"));
  c.backward = or_default(c.backward, c.forward);
  c.inference = or_default(c.inference, c.forward);
  std::unique_ptr<const CompiledBody> body;
  if (a.is_inference)
    body = std::make_unique<InferenceBody>(c.inference(a.inference), keep_graph_inputs);
  else
    body = autograd_body(a, c, keep_graph_inputs);
  return std::make_shared<const Runtime>(std::move(w), std::move(body));
}

}  // namespace aotgrad::aot
