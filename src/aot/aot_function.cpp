// CompiledFunction: the cache of specializations, their guards, and the compile pipeline.
//
// Reading guide: call() finds the specialization whose guards match the call (input dtypes,
// shapes, strides, requires_grad, grad mode, non-tensor arguments); on a miss compile() runs the
// pipeline top to bottom: capture → (joint → partition → compile fw/bw) or (inference → compile).
// Each stage can be dumped (AOTGRAD_DUMP=dir). AOTGRAD_LOG=recompiles logs why a call missed.
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "aot/capture.h"
#include "aot/joint.h"
#include "aot/runtime.h"
#include "aotgrad/autograd.h"
#include "graph/dce.h"
#include "graph/printer.h"
#include "partition/registry.h"

namespace aotgrad {
namespace {

struct InputGuard {
  DType dtype;
  IntList sizes, strides;
  int64_t storage_offset;
  bool requires_grad;
  bool operator==(const InputGuard&) const = default;
};

struct Entry {
  std::vector<InputGuard> guards;
  aot::InputPlan plan;  // which inputs repeat or overlap
  bool grad_mode;
  std::string key_extra;
  std::shared_ptr<const aot::Specialization> spec;
};

std::vector<InputGuard> guards_of(const std::vector<Tensor>& inputs, const std::string& fn_name) {
  std::vector<InputGuard> g;
  g.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined())
      throw std::invalid_argument(fn_name + ": input " + std::to_string(i) +
                                  " is an undefined Tensor; pass a defined tensor");
    g.push_back({inputs[i].dtype(), inputs[i].sizes(), inputs[i].strides(),
                 inputs[i].storage_offset(), inputs[i].requires_grad()});
  }
  return g;
}

bool env_has(const char* var, const std::string& word) {
  const char* v = std::getenv(var);
  return v && std::string(v).find(word) != std::string::npos;
}

std::string describe(const InputGuard& g) {
  return std::string(dtype_name(g.dtype)) + shape_to_string(g.sizes) + " strides " +
         shape_to_string(g.strides) + (g.requires_grad ? " requires_grad" : "");
}

// Why `e` does not cover this call, in words.
std::string mismatch(const Entry& e, const std::vector<InputGuard>& g, const aot::InputPlan& plan,
                     bool grad_mode, const std::string& key_extra) {
  if (e.grad_mode != grad_mode) return "grad mode changed";
  if (!(e.plan == plan))
    return "inputs repeat or alias differently: was\n" + e.plan.to_string() + "now\n" + plan.to_string();
  if (e.key_extra != key_extra) return "non-tensor arguments changed";
  if (e.guards.size() != g.size()) return "number of tensor inputs changed";
  for (size_t i = 0; i < g.size(); ++i)
    if (!(e.guards[i] == g[i]))
      return "input " + std::to_string(i) + " was " + describe(e.guards[i]) + ", now " + describe(g[i]);
  return "";
}

void dump(const std::string& fn_name, size_t index, const char* stage, const std::string& text) {
  const char* dir = std::getenv("AOTGRAD_DUMP");
  if (!dir || !*dir) return;
  std::ofstream(std::string(dir) + "/" + fn_name + "_" + std::to_string(index) + "_" + stage + ".txt")
      << text;
}

std::shared_ptr<const aot::Specialization> compile(const AotConfig& cfg, const FlatFn& fn,
                                                   const std::vector<Tensor>& inputs,
                                                   const aot::InputPlan& plan, size_t index) {
  auto spec = std::make_shared<aot::Specialization>();
  spec->fn_name = cfg.name;
  spec->plan = plan;
  std::vector<Tensor> graph_inputs = aot::graph_inputs_for(plan, inputs);
  aot::CapturedForward captured = aot::capture_forward(fn, inputs, plan, graph_inputs, cfg);
  spec->meta = captured.meta;
  spec->text.meta = captured.meta.to_string();
  spec->num_graph_outputs = captured.graph.outputs().size();
  for (graph::ValueId v : captured.graph.outputs()) spec->output_metas.push_back(captured.graph.value(v).meta);
  if (!captured.backward_errors.empty()) spec->backward_error = captured.backward_errors.front();
  backends::Compiler fw_compiler = backends::compiler(cfg.fw_compiler);

  if (!captured.needs_autograd) {
    graph::Graph inference = captured.graph;
    inference.set_name("inference");
    graph::eliminate_dead_code(inference);
    spec->is_inference = true;
    spec->text.is_inference = true;
    spec->text.inference = graph::print_graph(inference);
    dump(cfg.name, index, "inference", spec->text.inference);
    spec->inference = backends::compiler(cfg.inference_compiler.empty() ? cfg.fw_compiler
                                                                        : cfg.inference_compiler)(inference);
    return spec;
  }

  aot::JointGraph joint = aot::build_joint(captured.graph, captured.value_requires_grad);
  spec->text.joint = graph::print_graph(joint.graph);
  dump(cfg.name, index, "joint", spec->text.joint);
  partition::Partition part = partition::run_partitioner(
      cfg.partitioner, joint.graph, {joint.num_primals, joint.num_fw_outputs, captured.node_budgets},
      {.activation_memory_budget = cfg.activation_memory_budget});
  spec->text.forward = graph::print_graph(part.forward);
  spec->text.backward = graph::print_graph(part.backward);
  spec->text.saved_report = part.report();
  spec->text.num_saved = part.saved.size();
  spec->text.saved_bytes = part.saved_bytes();
  for (const partition::SavedValue& s : part.saved)
    if (s.primal_index < 0) spec->text.saved_activation_bytes += s.bytes;
  dump(cfg.name, index, "forward", spec->text.forward);
  dump(cfg.name, index, "backward", spec->text.backward);
  spec->tangent_of_output = joint.tangent_of_output;
  spec->grad_of_primal = joint.grad_of_primal;
  spec->saved = part.saved;
  spec->forward = fw_compiler(part.forward);
  spec->backward = backends::compiler(cfg.bw_compiler.empty() ? cfg.fw_compiler : cfg.bw_compiler)(part.backward);
  return spec;
}

}  // namespace

struct CompiledFunction::Impl {
  AotConfig config;
  std::vector<Entry> entries;
  size_t last = 0;
};

CompiledFunction::CompiledFunction(AotConfig config) : impl_(std::make_shared<Impl>()) {
  impl_->config = std::move(config);
  backends::compiler(impl_->config.fw_compiler);  // fail early on an unknown name
}

std::vector<Tensor> CompiledFunction::call(std::vector<Tensor> inputs, const std::string& key_extra,
                                           const std::function<FlatFn()>& make_fn) {
  Impl& s = *impl_;
  std::vector<InputGuard> g = guards_of(inputs, s.config.name);
  aot::InputPlan plan = aot::plan_inputs(inputs, s.config.name);
  bool grad_mode = autograd::grad_mode_enabled();
  auto matches = [&](const Entry& e) {
    return e.grad_mode == grad_mode && e.key_extra == key_extra && e.guards == g && e.plan == plan;
  };
  if (s.last < s.entries.size() && matches(s.entries[s.last]))
    return aot::run_specialization(s.entries[s.last].spec, inputs);
  for (size_t i = 0; i < s.entries.size(); ++i)
    if (matches(s.entries[i])) {
      s.last = i;
      return aot::run_specialization(s.entries[i].spec, inputs);
    }
  if (!s.entries.empty() && env_has("AOTGRAD_LOG", "recompiles"))
    std::cerr << "[aotgrad] recompiling " << s.config.name << ": "
              << mismatch(s.entries[s.last], g, plan, grad_mode, key_extra) << "\n";
  auto spec = compile(s.config, make_fn(), inputs, plan, s.entries.size());
  s.entries.push_back(Entry{std::move(g), std::move(plan), grad_mode, key_extra, spec});
  s.last = s.entries.size() - 1;
  return aot::run_specialization(spec, inputs);
}

CompiledGraphs CompiledFunction::graphs() const {
  if (impl_->entries.empty())
    throw std::logic_error(impl_->config.name + ": graphs() before the first call; call it first");
  return impl_->entries[impl_->last].spec->text;
}

size_t CompiledFunction::num_compilations() const { return impl_->entries.size(); }
const AotConfig& CompiledFunction::config() const { return impl_->config; }

}  // namespace aotgrad
