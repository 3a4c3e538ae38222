// Export (aotgrad/export.h): the lowering pipeline's graphs handed out as text with a signature.
//
// Reading guide: every entry point lowers once (aot/lower.h, lower_call) and then reads the
// Artifact: check_exportable applies PyTorch's export bans to its ViewAndMutationMeta;
// export_forward hands out the inference graph; export_joint seeds the joint's loss tangent with
// ones (seed_loss_tangent) so the graph takes no tangents, as PyTorch's no_tangents retrace does;
// aot_compile_joint_with_descriptors re-partitions the artifact's joint when asked for another
// partitioner, then instantiates it. Nothing here keeps state between calls.
#include "aotgrad/export.h"

#include "aot/artifact.h"
#include "aot/export_signature.h"
#include "aot/graph_function.h"
#include "aot/lower.h"
#include "aot/partition_fn.h"
#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "graph/dce.h"
#include "graph/node_args.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "partition/registry.h"

namespace aotgrad {
namespace {

using export_detail::ModuleCall;

[[noreturn]] void fail(const std::string& who, const std::string& what) {
  throw ExportError(who + ": " + what);
}

// param(fqn), buffer(fqn) for the lifted tensors, input(k) for the rest (as aot_function does).
std::vector<Descriptor> input_descriptors(const ModuleCall& call) {
  if (call.descs.size() == call.inputs.size()) return call.descs;
  std::vector<Descriptor> d;
  for (const std::string& n : call.fn.parameter_names) d.push_back(Descriptor::param(n));
  for (const std::string& n : call.fn.buffer_names) d.push_back(Descriptor::buffer(n));
  for (int64_t k = 0; d.size() < call.inputs.size(); ++k) d.push_back(Descriptor::input(k));
  d.resize(call.inputs.size());
  return d;
}

// Traces the call under grad mode `grad` and lowers it. Exported graphs are for other compilers:
// ATen ops only, so attention stays the composite unless the config asks for the fused row.
aot::Artifact lower_call(const ModuleCall& call, const AotConfig& given, bool grad) {
  AotConfig config = given;
  config.fuse_attention = given.fuse_attention.value_or(false);
  aot::TracedFunction traced{call.fn.fn, call.inputs, call.key_extra, input_descriptors(call)};
  if (grad) {
    EnableGradGuard enable;
    return aot::lower(traced, config);
  }
  NoGradGuard no_grad;
  return aot::lower(traced, config);
}

std::string input_text(const std::vector<Descriptor>& descs, size_t i) {
  return "input " + std::to_string(i) + " (" + descs[i].to_string() + ")";
}

size_t num_written_back(const aot::ViewAndMutationMeta& m) {
  size_t n = 0;
  for (size_t g : m.mutated_inputs) n += m.input_info[g].keep_in_graph ? 0 : 1;
  return n;
}

// PyTorch's export bans (create_aot_state with is_export, and the dedupe / synthetic-base
// wrappers), plus outputs that alias: the exported graph has no runtime around it to regenerate
// aliases or write aliased inputs back.
void check_exportable(const aot::Artifact& a, const std::vector<Descriptor>& descs,
                      const std::string& who) {
  const aot::ViewAndMutationMeta& m = a.meta;
  if (!a.guards.plan.trivial())
    fail(who,
         "the example inputs alias each other (a tensor passed twice, or overlapping views); "
         "export needs distinct, non-overlapping inputs");
  if (!m.metadata_mutations.empty())
    fail(who, input_text(descs, m.metadata_mutations.front().input) +
                  " received a metadata mutation (t_, as_strided_, resize_, ...); export supports "
                  "data mutations only");
  for (size_t g : m.mutated_inputs) {
    if (descs[g].kind == DescriptorKind::param)
      fail(who, input_text(descs, g) +
                    " is mutated; export supports mutating buffers and user inputs only");
    if (m.input_info[g].requires_grad)
      fail(who, input_text(descs, g) +
                    " requires gradients and is mutated; export refuses mutating an input that "
                    "requires grad (detach it, or mutate a buffer)");
  }
  for (size_t o = 0; o < m.output_info.size(); ++o) {
    aot::OutputType t = m.output_info[o].type;
    if (t != aot::OutputType::non_alias && t != aot::OutputType::unsafe_view_alias)
      fail(who, "output " + std::to_string(o) + " aliases an input or another output (" +
                    std::string(aot::output_type_name(t)) +
                    "); export needs outputs that own their data: return .clone() of it");
  }
}

// `ones` of the tangent's type, as an aten.full.default node (its other arguments defaulted).
graph::ValueId add_ones(graph::Graph& g, const graph::Value& tangent) {
  const ops::OpDef& full = ops::lookup("aten.full.default");
  const std::vector<ops::ArgSchema>& schema = full.parsed_schema().args;
  std::vector<graph::NodeArg> args{tangent.meta.sizes, Scalar(1.0), tangent.meta.dtype};
  for (size_t k = args.size(); k < schema.size(); ++k)
    args.push_back(graph::schema_default(schema[k]).value_or(graph::NodeArg{}));
  for (size_t k = 0; k < args.size(); ++k) args[k] = graph::canonical_arg(schema[k], args[k]);
  ops::TensorMeta meta = ops::TensorMeta::contiguous(tangent.meta.sizes, tangent.meta.dtype);
  return g.add_node(full, std::move(args), {meta}, {tangent.name}).at(0);
}

graph::NodeArg remapped(const graph::NodeArg& a, const std::vector<graph::ValueId>& to) {
  if (const auto* v = std::get_if<graph::ValueId>(&a)) return to[v->index];
  if (const auto* l = std::get_if<graph::ValueList>(&a)) {
    graph::ValueList out;
    for (graph::ValueId v : *l) out.push_back(to[v.index]);
    return out;
  }
  return a;
}

// The joint with its tangent inputs replaced by ones (PyTorch's no_tangents: the loss is the
// seed): inputs (primals), outputs as the joint's.
// Needs: a verified joint whose inputs after `num_primals` are tangents. Guarantees: a verified
// graph computing the same outputs, its nodes in the joint's order after the ones, dead ones
// removed.
graph::Graph seed_loss_tangent(const graph::Graph& joint, size_t num_primals) {
  graph::Graph g("joint");
  std::vector<graph::ValueId> to(joint.values().size());
  for (size_t i = 0; i < num_primals; ++i) {
    const graph::Value& v = joint.value(joint.inputs()[i]);
    to[joint.inputs()[i].index] = g.add_input(v.name, v.meta, joint.input_descs()[i]);
  }
  for (size_t i = num_primals; i < joint.inputs().size(); ++i)
    to[joint.inputs()[i].index] = add_ones(g, joint.value(joint.inputs()[i]));
  for (const graph::Node& n : joint.nodes()) {
    std::vector<graph::NodeArg> args;
    for (const graph::NodeArg& a : n.args) args.push_back(remapped(a, to));
    std::vector<ops::TensorMeta> metas;
    std::vector<std::string> names;
    for (graph::ValueId v : n.outputs) {
      metas.push_back(joint.value(v).meta);
      names.push_back(joint.value(v).name);
    }
    std::vector<graph::ValueId> outs = g.add_node(*n.op, std::move(args), metas, names);
    g.mutable_nodes().back().origin = n.origin;
    for (size_t k = 0; k < outs.size(); ++k) to[n.outputs[k].index] = outs[k];
  }
  for (size_t o = 0; o < joint.outputs().size(); ++o)
    g.add_output(to[joint.outputs()[o].index], joint.output_descs()[o]);
  graph::eliminate_dead_code(g);  // the VJP rules' unused zeros
  graph::verify_graph(g);
  return g;
}

// PyTorch's trace_joint checks: one scalar loss that requires grad, no other output that does,
// a gradient for every parameter that requires grad. Returns the loss's joint output position.
size_t check_loss(const aot::Artifact& a, const std::vector<Descriptor>& descs,
                  const ExportOptions& o) {
  const std::vector<aot::OutputAliasInfo>& outs = a.meta.output_info;
  if (!o.output_loss_index)
    fail(o.name,
         "trace_joint needs output_loss_index: one of the forward's outputs must be a "
         "scalar loss");
  size_t loss = *o.output_loss_index;
  if (loss >= outs.size())
    fail(o.name, "output_loss_index is " + std::to_string(loss) + ", but the forward returns " +
                     std::to_string(outs.size()) + " outputs");
  for (size_t k = 0; k < outs.size(); ++k)
    if (k != loss && outs[k].requires_grad)
      fail(o.name, "output " + std::to_string(k) +
                       " requires gradients but is not the scalar loss (output " +
                       std::to_string(loss) + "); detach() it or return it from another function");
  if (a.is_inference || !outs[loss].requires_grad)
    fail(o.name, "the loss (output " + std::to_string(loss) +
                     ") does not require gradients: no parameter or input that requires grad "
                     "reaches it");
  size_t at = num_written_back(a.meta) + static_cast<size_t>(outs[loss].graph_output);
  const graph::Graph& joint = a.joint.get();
  const ops::TensorMeta& m = joint.value(joint.outputs()[at]).meta;
  if (numel_of(m.sizes) != 1)
    fail(o.name, "the loss (output " + std::to_string(loss) + ") must be a scalar, got " +
                     std::string(dtype_name(m.dtype)) + shape_to_string(m.sizes));
  std::vector<bool> has_grad(descs.size(), false);
  for (size_t p : a.grad_of_primal) has_grad[p] = true;
  for (size_t i = 0; i < descs.size(); ++i)
    if (descs[i].kind == DescriptorKind::param && a.meta.input_info[i].requires_grad &&
        !has_grad[i])
      fail(o.name, "parameter " + descs[i].name +
                       " requires grad but receives no gradient from the loss; set "
                       "requires_grad_(false) on it or use it in the forward");
  return at;
}

ExportedGraph export_forward(const ModuleCall& call, const ExportOptions& o) {
  AotConfig config;
  config.name = o.name;
  aot::Artifact a = lower_call(call, config, false);
  check_exportable(a, input_descriptors(call), o.name);
  ExportedGraph e;
  e.graph = graph::print_graph(a.inference);
  e.descriptors = a.inference.descriptors();
  e.signature = aot::signature_of(a.inference, std::nullopt, o.name);
  return e;
}

ExportedGraph export_joint(const ModuleCall& call, const ExportOptions& o) {
  AotConfig config;
  config.name = o.name;
  aot::Artifact a = lower_call(call, config, true);
  std::vector<Descriptor> descs = input_descriptors(call);
  check_exportable(a, descs, o.name);
  size_t loss = check_loss(a, descs, o);
  const graph::Graph& joint = a.joint.get();
  graph::Graph g = seed_loss_tangent(joint, joint.inputs().size() - a.tangent_of_output.size());
  ExportedGraph e;
  e.graph = graph::print_graph(g);
  e.descriptors = g.descriptors();
  e.signature = aot::signature_of(g, loss, o.name);
  e.forward = graph::print_graph(a.forward);
  e.backward = graph::print_graph(a.backward);
  return e;
}

// A backward node no VJP rule made recomputes a forward value (min_cut): it came from itself.
void mark_recomputed(graph::Graph& backward) {
  for (graph::Node& n : backward.mutable_nodes())
    if (n.origin.empty() && !n.outputs.empty()) n.origin = backward.value(n.outputs[0]).name;
}

}  // namespace

namespace export_detail {

ExportedGraph export_module(const ModuleCall& call, const ExportOptions& options) {
  return options.trace_joint ? export_joint(call, options) : export_forward(call, options);
}

Artifact lower_joint(const ModuleCall& call, const AotConfig& config) {
  return Artifact(std::make_shared<const aot::Artifact>(lower_call(call, config, true)));
}

}  // namespace export_detail

ExportedGraph aot_export_graph(std::string_view graph_text, const std::string& source,
                               const ExportOptions& options) {
  auto g = std::make_shared<graph::Graph>();
  try {
    *g = graph::parse_graph(graph_text);
    graph::verify_graph(*g);
  } catch (const std::invalid_argument& e) {
    throw ExportError(source + ": " + e.what());
  }
  std::vector<bool> written = aot::written_inputs(*g);
  bool has_params = false;
  for (const Descriptor& d : g->input_descs()) has_params |= d.kind == DescriptorKind::param;
  ModuleCall call;
  int64_t k = 0;
  for (size_t i = 0; i < g->inputs().size(); ++i) {
    const ops::TensorMeta& m = g->value(g->inputs()[i]).meta;
    Descriptor d = g->input_descs()[i];
    if (d.kind != DescriptorKind::param && d.kind != DescriptorKind::buffer)
      d = Descriptor::input(k++);
    bool rg = has_params ? d.kind == DescriptorKind::param : is_floating(m.dtype) && !written[i];
    Tensor t = zeros(m.sizes, m.dtype);
    if (rg) t.requires_grad_();
    call.inputs.push_back(t);
    call.descs.push_back(std::move(d));
    call.key_extra += 'T';
  }
  call.fn.fn = aot::graph_as_function(g);
  ExportOptions o = options;
  if (o.name == ExportOptions{}.name) o.name = source;
  return export_detail::export_module(call, o);
}

ExportedGraph aot_export_joint_simple(const FlatFn& fn, const std::vector<Tensor>& args,
                                      bool trace_joint) {
  const std::string who = "aot_export_joint_simple";
  ModuleCall call;
  call.fn.fn = fn;
  call.inputs = args;
  call.key_extra = std::string(args.size(), 'T');
  AotConfig config;
  config.name = who;
  aot::Artifact a = lower_call(call, config, trace_joint);
  std::vector<Descriptor> descs = input_descriptors(call);
  const aot::ViewAndMutationMeta& m = a.meta;
  for (size_t i = 0; i < m.input_info.size(); ++i)
    if (m.input_info[i].mutates_data || m.input_info[i].mutates_metadata)
      fail(who,
           "does not support input mutations: " + input_text(descs, i) + " is written in place");
  check_exportable(a, descs, who);
  if (trace_joint && a.is_inference)
    fail(who,
         "trace_joint: no output requires gradients (no input that requires grad reaches an "
         "output)");
  const graph::Graph& g = trace_joint ? a.joint.get() : a.inference;
  ExportedGraph e;
  e.graph = graph::print_graph(g);
  e.descriptors = g.descriptors();
  e.signature = aot::signature_of(g, std::nullopt, who);
  return e;
}

std::string JointWithDescriptors::graph() const {
  const aot::Artifact& a = artifact_.data();
  return graph::print_graph(a.is_inference ? a.inference : a.joint.get());
}

GraphDescriptors JointWithDescriptors::descriptors() const {
  const aot::Artifact& a = artifact_.data();
  return (a.is_inference ? a.inference : a.joint.get()).descriptors();
}

std::vector<std::string> JointWithDescriptors::parameters() const {
  std::vector<std::string> out;
  for (const Descriptor& d : descriptors().inputs)
    if (d.kind == DescriptorKind::param) out.push_back(d.name);
  return out;
}

std::vector<std::string> JointWithDescriptors::buffers() const {
  std::vector<std::string> out;
  for (const Descriptor& d : descriptors().inputs)
    if (d.kind == DescriptorKind::buffer) out.push_back(d.name);
  return out;
}

CompiledArtifact aot_compile_joint_with_descriptors(const JointWithDescriptors& joint,
                                                    const AotConfig& config) {
  aot::Artifact a = joint.artifact().data();
  bool repartition = config.partition_fn ||  // a user's partitioner always runs
                     config.partitioner != a.config.partitioner ||
                     config.activation_memory_budget != a.config.activation_memory_budget;
  if (!a.is_inference && repartition) {
    const graph::Graph& joint = a.joint.get();
    partition::JointInfo info{joint.inputs().size() - a.tangent_of_output.size(),
                              joint.outputs().size() - a.grad_of_primal.size(),
                              {}};
    partition::Partition part = aot::run_partition(config, joint, info);
    mark_recomputed(part.backward);
    a.forward = std::move(part.forward);
    a.backward = std::move(part.backward);
    a.saved = std::move(part.saved);
    a.config.partitioner = config.partitioner;
    a.config.activation_memory_budget = config.activation_memory_budget;
  }
  return instantiate(Artifact(std::make_shared<const aot::Artifact>(std::move(a))), config);
}

std::vector<Tensor> SimplifiedModule::operator()(const std::vector<Tensor>& user_inputs) const {
  const aot::Artifact& a = compiled_.artifact().data();
  size_t expected = a.guards.inputs.size() - params_buffers_.size();
  if (user_inputs.size() != expected)
    throw std::invalid_argument(
        a.config.name + ": aot_module_simplified was compiled for " + std::to_string(expected) +
        " user inputs, got " + std::to_string(user_inputs.size()) +
        " (input positions in errors count the " + std::to_string(params_buffers_.size()) +
        " parameters and buffers first)");
  std::vector<Tensor> full = params_buffers_;
  full.insert(full.end(), user_inputs.begin(), user_inputs.end());
  return compiled_(full);
}

}  // namespace aotgrad
