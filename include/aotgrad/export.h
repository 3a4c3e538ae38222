// Export, as PyTorch's AOTAutograd offers it: a module's (or function's) graphs as text, with a
// signature that says what every graph input and output is, for another tool to run or compile.
//
//   auto model = std::make_shared<Net>();                         // parameters, buffers
//   ExportedGraph e = aot_export_module(model, std::tuple{x},     // forward(x) -> loss
//                                       {.trace_joint = true, .output_loss_index = 0});
//   e.graph                       // (params, buffers, user inputs) -> (mutated buffers, loss,
//                                 //  parameter gradients): docs/ir.md text, GraphProgram::parse
//   e.signature.to_json()         // parameters, buffers, inputs_to_parameters, buffers_to_mutate,
//                                 // backward_signature {gradients_to_parameters, loss_output}, ...
//
//   aot_export_joint_simple(fn, args, trace_joint)     the graph of a flat function, with no
//                                 calling-convention change (no mutation, no aliased outputs)
//   aot_export_joint_with_descriptors(model, args)     the joint graph and its descriptors, then
//   aot_compile_joint_with_descriptors(joint, config)  partitioned and compiled: a callable taking
//                                 (params..., buffers..., user inputs...) like aot_function's
//   aot_module_simplified(model, inputs, config)       torch.compile's entry point: flat inputs,
//                                 parameters and buffers read once and passed first
//
// Graph inputs are always (parameters, buffers, user inputs), parameters and buffers in
// named_parameters() / named_buffers() order and user tensors flattened as aot_function does.
// The signature is derived from the graphs' typed descriptors (aotgrad/descriptor.h); names in
// it are the graph's value names (without '%') and the modules' fully-qualified names.
//
// What export refuses, one line each (ExportError), following PyTorch: an input whose metadata is
// mutated (t_, as_strided_), a mutated parameter or input that requires grad, mutated inputs that
// alias each other, outputs that alias an input or another output; with trace_joint, a missing,
// non-scalar or non-differentiable loss, another output that requires grad, and a parameter that
// requires grad but gets no gradient.
//
// Thread-safety: every function here may be called from several threads at once for different
// modules; the returned values are plain data (CompiledArtifact and SimplifiedModule are
// thread-safe callables). Exporting a module traces its forward the way aot_module does (its
// slots hold the tracer's stand-ins for the duration), with the same locking.
#pragma once

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "aotgrad/aot.h"
#include "aotgrad/nn/aot_module.h"

namespace aotgrad {

// A mistake export refuses (see above), or a signature JSON that does not read back. One line.
class ExportError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// (key, value) pairs in graph order; PyTorch's ordered dicts.
using NameMap = std::vector<std::pair<std::string, std::string>>;

// What a joint export's backward part produces (PyTorch's BackwardSignature).
struct BackwardSignature {
  NameMap gradients_to_parameters;   // gradient output -> parameter FQN
  NameMap gradients_to_user_inputs;  // gradient output -> user input
  std::string loss_output;           // the output holding the scalar loss
  bool operator==(const BackwardSignature&) const = default;
};

// What every input and output of an exported graph is (PyTorch's GraphSignature).
struct GraphSignature {
  std::vector<std::string> parameters, buffers;        // FQNs, in graph-input order
  std::vector<std::string> user_inputs, user_outputs;  // graph value names
  NameMap inputs_to_parameters, inputs_to_buffers;     // graph input -> FQN
  NameMap buffers_to_mutate;                           // output -> buffer FQN it overwrites
  NameMap user_inputs_to_mutate;                       // output -> user input it overwrites
  // Fed and dropped by the runtime, not the caller: the effect token threaded through effectful
  // ops (PyTorch's input_tokens / output_tokens), and the generator state random ops draw from
  // (graph input -> its descriptor, "fw_rng_seed()" or "fw_rng_offset(N)": N Philox blocks).
  std::vector<std::string> input_tokens, output_tokens;  // graph value names
  NameMap rng_inputs;
  std::optional<BackwardSignature> backward_signature;  // trace_joint only

  // A JSON object with PyTorch's field names; signature_from_json(s.to_json()) == s.
  std::string to_json() const;
  bool operator==(const GraphSignature&) const = default;
};

// Reads what to_json writes (any JSON whitespace, fields in any order, missing maps empty).
// Throws ExportError naming the byte offset and what was expected.
GraphSignature signature_from_json(std::string_view json);

// The signature of a graph whose inputs and outputs carry descriptors, given its text: param,
// buffer and input(k) inputs; mutated_input, output(k) and grad outputs; `loss_output` (an output
// position) fills backward_signature. Throws ExportError for an input or output without one.
GraphSignature signature_of_graph(std::string_view graph_text,
                                  std::optional<size_t> loss_output = std::nullopt);

struct ExportOptions {
  // Export the joint forward+backward graph of a scalar loss instead of the forward alone.
  bool trace_joint = false;
  // Which user output is the loss (trace_joint only; required there).
  std::optional<size_t> output_loss_index;
  std::string name = "aot_export_module";  // prefixes error lines
};

struct ExportedGraph {
  // The graph (docs/ir.md; GraphProgram::parse reads it), descriptors printed as comments.
  // Forward-only export: (params, buffers, user inputs) -> (mutated inputs, user outputs), traced
  // under no_grad. trace_joint: the same inputs -> (mutated inputs, user outputs, gradients of
  // the parameters and user inputs that require grad), the loss seeded with ones (no tangents).
  std::string graph;
  GraphDescriptors descriptors;
  GraphSignature signature;
  // trace_joint: the joint as aot_function partitions it (default partitioner): the forward
  // (inputs -> outputs, saved values) and backward (saved values, tangent of the loss -> grads).
  std::string forward, backward;
};

// The joint graph of a module as aot_function would compile it (PyTorch's JointWithDescriptors):
// inputs (params, buffers, user inputs, tangents), outputs (mutated inputs, user outputs,
// gradients), each with its descriptor. A module whose outputs need no gradient has no joint:
// graph() is then its inference graph.
class JointWithDescriptors {
 public:
  explicit JointWithDescriptors(Artifact artifact) : artifact_(std::move(artifact)) {}
  std::string graph() const;
  GraphDescriptors descriptors() const;
  std::vector<std::string> parameters() const;  // PyTorch's params_spec: FQNs
  std::vector<std::string> buffers() const;     // buffers_spec
  const Artifact& artifact() const { return artifact_; }

 private:
  Artifact artifact_;
};

// aot_module_simplified's callable: call it with the user inputs only; it passes the parameters
// and buffers read when it was made first. Thread-safe.
class SimplifiedModule {
 public:
  SimplifiedModule(CompiledArtifact compiled, std::vector<Tensor> params_buffers)
      : compiled_(std::move(compiled)), params_buffers_(std::move(params_buffers)) {}
  std::vector<Tensor> operator()(const std::vector<Tensor>& user_inputs) const;
  const Artifact& artifact() const { return compiled_.artifact(); }

 private:
  CompiledArtifact compiled_;
  std::vector<Tensor> params_buffers_;
};

namespace export_detail {

// A module's forward as a flat function of (params, buffers, user inputs), with those inputs.
struct ModuleCall {
  FlatFunction fn;
  std::vector<Tensor> inputs;
  std::string key_extra;  // the call's records (aot.h), for error messages
  // One per input; empty: param(fqn) and buffer(fqn) from fn's names, then input(k).
  std::vector<Descriptor> descs;
};

// The module's parameters and buffers lifted to the first inputs of a flat function that runs
// its forward with them in their slots (nn_detail::lifted_function, which aot_module's call
// builds too): the wrapper module_call and aot_module_simplified share. `forward_of(model,
// inputs, first)` calls the forward on the user inputs from inputs[first] on and returns its flat
// results. The returned call's inputs are the lifted tensors only; the caller appends the user
// inputs.
template <typename M, typename Forward>
ModuleCall lifted_module_call(const std::shared_ptr<M>& model, Forward forward_of) {
  nn_detail::LiftedState lifted = nn_detail::lift(*model);
  ModuleCall call;
  call.inputs = std::move(lifted.tensors);
  call.key_extra = std::move(lifted.key);
  call.fn = nn_detail::lifted_function(model, std::move(lifted.slots), lifted.num_parameters,
                                       std::move(forward_of));
  return call;
}

template <typename M, typename... Args>
ModuleCall module_call(const std::shared_ptr<M>& model, const std::tuple<Args...>& args) {
  if (!model) throw ExportError("export: the module is null");
  ModuleCall call = lifted_module_call(
      model, nn_detail::forward_of_args<M>(std::make_shared<std::tuple<Args...>>(args)));
  std::apply(
      [&](const auto&... a) { (aot_detail::flatten_arg(a, call.inputs, call.key_extra), ...); },
      args);
  return call;
}

// Whether `M::forward` takes `n` tensors as separate arguments (one to three), or one
// std::vector<Tensor>: the flat calls aot_module_simplified makes.
template <typename M>
bool takes_flat(size_t n) {
  using T = const Tensor&;
  if constexpr (requires(M & m, const std::vector<Tensor>& v) { m.forward(v); }) return true;
  if constexpr (requires(M & m, T x) { m.forward(x); })
    if (n == 1) return true;
  if constexpr (requires(M & m, T x, T y) { m.forward(x, y); })
    if (n == 2) return true;
  if constexpr (requires(M & m, T x, T y, T z) { m.forward(x, y, z); })
    if (n == 3) return true;
  return false;
}

// Calls `model.forward` with the tensors of `a` as takes_flat says (checked beforehand).
template <typename M>
std::vector<Tensor> call_flat(M& model, const std::vector<Tensor>& a) {
  auto result = [](auto&& r) { return aot_detail::Outputs<std::decay_t<decltype(r)>>::flatten(r); };
  using T = const Tensor&;
  if constexpr (requires(M & m, const std::vector<Tensor>& v) { m.forward(v); }) {
    return result(model.forward(a));
  } else {
    if constexpr (requires(M & m, T x) { m.forward(x); })
      if (a.size() == 1) return result(model.forward(a[0]));
    if constexpr (requires(M & m, T x, T y) { m.forward(x, y); })
      if (a.size() == 2) return result(model.forward(a[0], a[1]));
    if constexpr (requires(M & m, T x, T y, T z) { m.forward(x, y, z); })
      return result(model.forward(a.at(0), a.at(1), a.at(2)));
    throw ExportError("aot_module_simplified: forward takes no " + std::to_string(a.size()) +
                      " tensors");
  }
}

ExportedGraph export_module(const ModuleCall& call, const ExportOptions& options);
Artifact lower_joint(const ModuleCall& call, const AotConfig& config);

}  // namespace export_detail

// The graph and signature of model->forward(args...) (PyTorch's aot_export_module).
template <typename M, typename... Args>
ExportedGraph aot_export_module(const std::shared_ptr<M>& model, const std::tuple<Args...>& args,
                                const ExportOptions& options = {}) {
  return export_detail::export_module(export_detail::module_call(model, args), options);
}

// A graph file as a module (`aotgrad export`): inputs described param(fqn) / buffer(fqn) are its
// parameters and buffers, the others its user inputs. Parameters require grad; when no input is a
// parameter, every floating input the graph does not write into does (GraphProgram's rule).
// `source` names the text in errors.
ExportedGraph aot_export_graph(std::string_view graph_text, const std::string& source,
                               const ExportOptions& options);

// The graph of a flat function (PyTorch's aot_export_joint_simple): its inference graph, traced
// under no_grad, with exactly fn's inputs and outputs; with trace_joint, its joint graph
// (inputs, tangents of the outputs that require grad) -> (outputs, gradients of the inputs that
// require grad). Refuses any input mutation and any output that aliases an input or another
// output, one line each. The signature lists every input as a user input.
ExportedGraph aot_export_joint_simple(const FlatFn& fn, const std::vector<Tensor>& args,
                                      bool trace_joint);

// The joint graph of model->forward(args...), for inspection and then compilation.
template <typename M, typename... Args>
JointWithDescriptors aot_export_joint_with_descriptors(const std::shared_ptr<M>& model,
                                                       const std::tuple<Args...>& args,
                                                       const AotConfig& config = {}) {
  return JointWithDescriptors(
      export_detail::lower_joint(export_detail::module_call(model, args), config));
}

// Partitions the joint with config.partitioner (and activation_memory_budget) and compiles it
// with config's compilers: a callable taking (params..., buffers..., user inputs...) whose
// results, mutations and gradients are aot_function's.
CompiledArtifact aot_compile_joint_with_descriptors(const JointWithDescriptors& joint,
                                                    const AotConfig& config = {});

// torch.compile's entry point (PyTorch's aot_module_simplified): compiles model->forward for
// `example_inputs` (flat tensors) now; the callable takes inputs of the same kind and prepends
// the parameters and buffers as they were read here.
template <typename M>
SimplifiedModule aot_module_simplified(const std::shared_ptr<M>& model,
                                       const std::vector<Tensor>& example_inputs,
                                       AotConfig config = {}) {
  if (!model) throw ExportError("aot_module_simplified: the module is null");
  if (config.name == AotConfig{}.name) config.name = model->type_name();
  if (!export_detail::takes_flat<M>(example_inputs.size()))
    throw ExportError("aot_module_simplified: " + model->type_name() + "::forward does not take " +
                      std::to_string(example_inputs.size()) +
                      " tensors (flat inputs: one to three Tensors, or one std::vector<Tensor>)");
  export_detail::ModuleCall call = export_detail::lifted_module_call(
      model, [](M& m, const std::vector<Tensor>& inputs, size_t first_user) {
        std::vector<Tensor> user(inputs.begin() + static_cast<std::ptrdiff_t>(first_user),
                                 inputs.end());
        return export_detail::call_flat(m, user);
      });
  std::vector<Tensor> params_buffers = call.inputs;
  call.inputs.insert(call.inputs.end(), example_inputs.begin(), example_inputs.end());
  call.key_extra += std::string(example_inputs.size(), 'T');
  Artifact artifact = export_detail::lower_joint(call, config);
  return SimplifiedModule(instantiate(artifact, config), std::move(params_buffers));
}

}  // namespace aotgrad
