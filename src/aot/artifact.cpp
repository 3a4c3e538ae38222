// The Artifact's small pieces (aot/artifact.h) and the public face of artifacts
// (aotgrad/artifact.h, CompiledArtifact and instantiate in aotgrad/aot.h).
#include "aot/artifact.h"

#include "aot/runtime.h"
#include "aotgrad/autograd.h"
#include "graph/printer.h"

namespace aotgrad {
namespace aot {

ArtifactConfig artifact_config(const AotConfig& c) {
  return {c.name,
          c.partitioner,
          c.activation_memory_budget,
          c.keep_inference_input_mutations,
          c.fw_compiler,
          c.bw_compiler,
          c.inference_compiler,
          c.fuse_attention.value_or(!c.fw_compiler_fn && c.fw_compiler == "cpp")};
}

LazyGraph::LazyGraph(graph::Graph g) : state_(std::make_shared<State>()) {
  state_->graph = std::move(g);
  state_->ready.store(true, std::memory_order_release);
}

LazyGraph LazyGraph::deferred(std::string text, Parse parse) {
  LazyGraph lazy;
  lazy.state_ = std::make_shared<State>();
  lazy.state_->text = std::move(text);
  lazy.state_->parse = std::move(parse);
  return lazy;
}

const graph::Graph& LazyGraph::get() const {
  State& s = *state_;
  if (!s.ready.load(std::memory_order_acquire)) {
    std::lock_guard lock(s.mutex);
    if (!s.ready.load(std::memory_order_relaxed)) {
      s.graph = s.parse(s.text);
      s.text = std::string();
      s.parse = nullptr;
      s.ready.store(true, std::memory_order_release);
    }
  }
  return s.graph;
}

std::string guard_key(const Guards& g) {
  return guard_key(g.inputs, g.plan, g.grad_mode, g.key_extra);
}

CompiledGraphs compiled_graphs(const Artifact& a) {
  CompiledGraphs g;
  g.is_inference = a.is_inference;
  if (a.is_inference) {
    g.inference = graph::print_graph(a.inference);
    g.inference_descriptors = a.inference.descriptors();
  } else {
    g.forward = graph::print_graph(a.forward);
    g.backward = graph::print_graph(a.backward);
    g.joint = graph::print_graph(a.joint.get());
    g.forward_descriptors = a.forward.descriptors();
    g.backward_descriptors = a.backward.descriptors();
    g.joint_descriptors = a.joint.get().descriptors();
    g.saved_report = partition::saved_report(a.saved);
    g.num_saved = a.saved.size();
    g.saved_bytes = partition::saved_bytes(a.saved);
    g.saved_activation_bytes = partition::saved_activation_bytes(a.saved);
  }
  g.meta = a.meta.to_string();
  return g;
}

}  // namespace aot

Artifact::Artifact(std::shared_ptr<const aot::Artifact> data) : data_(std::move(data)) {}

const std::string& Artifact::name() const {
  return data_->config.name;
}

bool Artifact::is_inference() const {
  return data_->is_inference;
}

CompiledGraphs Artifact::graphs() const {
  return aot::compiled_graphs(*data_);
}

std::string serialize_artifact(const Artifact& artifact) {
  return aot::serialize_artifact(artifact.data());
}

Artifact deserialize_artifact(std::string_view bytes) {
  return Artifact(std::make_shared<const aot::Artifact>(aot::deserialize_artifact(bytes)));
}

namespace {

std::string describe_guard(const aot::InputGuard& g) {
  return aot::describe(g);
}

// Why the call's inputs do not satisfy `a`'s guards, in one line (the first difference).
std::string guard_mismatch(const aot::Artifact& a, const std::vector<Tensor>& inputs,
                           bool grad_mode) {
  const aot::Guards& g = a.guards;
  std::string who = "artifact '" + a.config.name + "'";
  if (inputs.size() != g.inputs.size())
    return who + " takes " + std::to_string(g.inputs.size()) + " tensor inputs, got " +
           std::to_string(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined() || inputs[i].is_fake())
      return who + ": input " + std::to_string(i) + " must be a defined, real tensor";
    aot::InputGuard now = aot::input_guards({inputs[i]}).front();
    if (g.inputs[i].storage_offset == aot::kAnyStorageOffset)
      now.storage_offset = aot::kAnyStorageOffset;
    if (!(now == g.inputs[i]))
      return who + ": input " + std::to_string(i) + " must be " + describe_guard(g.inputs[i]) +
             ", got " + describe_guard(now);
  }
  if (grad_mode != g.grad_mode)
    return who + " was compiled with grad mode " + (g.grad_mode ? "on" : "off") +
           "; call it under the same grad mode";
  return who + ": the inputs repeat or overlap in memory differently than when it was compiled";
}

}  // namespace

CompiledArtifact instantiate(const Artifact& artifact, const AotConfig& compilers) {
  std::shared_ptr<const aot::Runtime> rt =
      aot::instantiate(artifact.data(), aot::named_compilers(compilers));
  return CompiledArtifact(artifact, std::move(rt), aot::guard_key(artifact.data().guards));
}

CompiledArtifact instantiate(const Artifact& artifact) {
  const aot::ArtifactConfig& c = artifact.data().config;
  AotConfig config;
  config.fw_compiler = c.fw_compiler;
  config.bw_compiler = c.bw_compiler;
  config.inference_compiler = c.inference_compiler;
  return instantiate(artifact, config);
}

std::vector<Tensor> CompiledArtifact::operator()(const std::vector<Tensor>& inputs) const {
  const aot::Artifact& a = artifact_.data();
  bool grad_mode = autograd::grad_mode_enabled();
  for (const Tensor& t : inputs)
    if (!t.defined() || t.is_fake())
      throw std::invalid_argument(guard_mismatch(a, inputs, grad_mode));
  aot::InputPlan plan = aot::plan_inputs(inputs, a.config.name);
  bool with_offsets = aot::guards_offsets(a.guards.inputs);
  if (aot::guard_key(inputs, plan, grad_mode, a.guards.key_extra, with_offsets) != key_)
    throw std::invalid_argument(guard_mismatch(a, inputs, grad_mode));
  return static_cast<const aot::Runtime*>(runtime_.get())->run(inputs);
}

}  // namespace aotgrad
