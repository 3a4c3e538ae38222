// The public compiler interface: what a user-supplied compiler, partitioner, graph pass or
// decomposition sees and returns (docs/compilers.md has a worked example).
//
//   aotgrad::AotConfig cfg;
//   cfg.fw_compiler_fn = [](const aotgrad::GraphView& g) -> aotgrad::CompiledGraphFn {
//     std::cout << g.to_text();                              // the forward graph
//     return aotgrad::compile_with("interpreter", g);        // delegate to a registered compiler
//   };
//   auto f = aotgrad::aot_function(fn, cfg);
//
// Reading guide:
//   GraphView / NodeView / ValueView   a read-only view of one graph of the IR (docs/ir.md): its
//                                      inputs (with descriptors and tensor metadata), its nodes in
//                                      execution order (op name, one argument per schema
//                                      argument, results) and its outputs. Views share the graph;
//                                      copies are cheap and may outlive the compile.
//   GraphBuilder                       builds a new graph, empty or starting from a view, for
//                                      passes; build() verifies it and returns a GraphView.
//   CompilerFn / CompiledGraphFn       a compiler turns a graph into a callable (PyTorch's boxed
//                                      convention: it takes its inputs by value and may free them).
//   PartitionFn                        splits a joint graph into forward and backward graphs;
//                                      default_partition and min_cut_rematerialization_partition
//                                      are the built-in ones, so a custom one can wrap them.
//   register_compiler                  makes a compiler selectable by name (AotConfig::fw_compiler,
//                                      GraphRunOptions, the CLI).
//   DecompositionTable                 op name -> a function over Tensors the tracer calls instead
//                                      of recording the op.
//
// Thread-safety: views, builders (one per thread) and the free functions here may be used from
// any number of threads. The callables a user supplies are called from whichever thread compiles
// or calls, possibly several at once, so they must be thread-safe themselves.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "aotgrad/custom_op.h"
#include "aotgrad/descriptor.h"
#include "aotgrad/tensor.h"

namespace aotgrad {

namespace graph {
class Graph;
}

// ---- calling ops by name ----

// OpArg and call_op (call an op by name, eagerly or recorded when traced) are declared in
// aotgrad/custom_op.h, included above.

// ---- read-only view of a graph ----

// A value's tensor metadata. Empty strides mean contiguous.
struct TensorInfo {
  DType dtype = DType::f32;
  IntList sizes;
  IntList strides;
  int64_t storage_offset = 0;
  bool operator==(const TensorInfo&) const = default;
};

// A handle to a value of one graph (and of a GraphBuilder started from it): the index of its
// definition. Stable across GraphBuilder edits.
struct ValueRef {
  uint32_t id = 0;
  auto operator<=>(const ValueRef&) const = default;
};

class NodeView;
class GraphView;

class ValueView {
 public:
  ValueRef ref() const { return {id_}; }
  const std::string& name() const;  // printed with a leading '%'
  TensorInfo info() const;
  DType dtype() const;
  const IntList& sizes() const;
  bool is_input() const;
  size_t input_index() const;                // position among the graph's inputs (is_input())
  std::optional<NodeView> producer() const;  // none for a graph input
  size_t output_index() const;               // which result of its producer it is

 private:
  friend class GraphView;
  friend class NodeView;
  ValueView(std::shared_ptr<const graph::Graph> g, uint32_t id) : g_(std::move(g)), id_(id) {}
  std::shared_ptr<const graph::Graph> g_;
  uint32_t id_ = 0;
};

// A node argument: the alternatives of OpArg, in its order, with values where the op takes
// tensors.
using ArgView = std::variant<std::monostate, ValueView, Scalar, int64_t, double, bool, IntList,
                             DType, std::vector<ValueView>, std::string>;

class NodeView {
 public:
  size_t index() const { return index_; }  // position in execution order
  std::string_view op() const;             // "aten.mul.Tensor"
  std::string_view schema() const;         // "mul.Tensor(Tensor self, Tensor other) -> Tensor"
  // One argument per schema argument, defaults filled in.
  size_t num_args() const;
  std::string_view arg_name(size_t i) const;
  ArgView arg(size_t i) const;
  std::vector<ArgView> args() const;
  // The argument called `name` ("alpha"); throws std::invalid_argument naming it when the op
  // has none.
  ArgView arg(std::string_view name) const;
  std::vector<ValueView> outputs() const;
  ValueView output(size_t i = 0) const;
  // Backward nodes: the forward value whose node they came from ("# from %name"); else empty.
  const std::string& origin() const;

 private:
  friend class GraphView;
  friend class ValueView;
  NodeView(std::shared_ptr<const graph::Graph> g, size_t index) : g_(std::move(g)), index_(index) {}
  std::shared_ptr<const graph::Graph> g_;
  size_t index_ = 0;
};

class GraphView {
 public:
  // Wraps an IR graph (the library's own; a user gets views from compilers and builders).
  explicit GraphView(std::shared_ptr<const graph::Graph> g);
  // Parses graph text (docs/ir.md) and verifies it; throws std::invalid_argument (one line).
  static GraphView parse(std::string_view text);

  const std::string& name() const;  // "forward", "backward", "inference", "joint", ...
  size_t num_inputs() const;
  ValueView input(size_t i) const;
  std::vector<ValueView> inputs() const;
  const Descriptor& input_descriptor(size_t i) const;  // param(w), input(0), tangent(...)
  size_t num_nodes() const;
  NodeView node(size_t i) const;
  std::vector<NodeView> nodes() const;
  size_t num_outputs() const;
  ValueView output(size_t i) const;
  std::vector<ValueView> outputs() const;
  const Descriptor& output_descriptor(size_t i) const;
  GraphDescriptors descriptors() const;
  ValueView value(ValueRef v) const;  // throws std::out_of_range for a ref of another graph
  // The graph in the text format of docs/ir.md (what AOTGRAD_LOG=graphs prints).
  std::string to_text() const;

  const graph::Graph& graph() const { return *g_; }  // the library's IR
  const std::shared_ptr<const graph::Graph>& shared() const { return g_; }

 private:
  std::shared_ptr<const graph::Graph> g_;
};

// An argument given to GraphBuilder::add_node: OpArg's alternatives with values for tensors.
using BuilderArg = std::variant<std::monostate, ValueRef, Scalar, int64_t, double, bool, IntList,
                                DType, std::vector<ValueRef>, std::string>;
// The builder argument that reads what `a` reads (a node's argument, for copying it).
BuilderArg builder_arg(const ArgView& a);

// Builds a graph for a pass. Started from a view, it holds that graph's inputs, nodes and
// outputs, and the view's ValueRefs name the same values. Not thread-safe (one thread per
// builder); build() leaves the builder usable.
class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name = "graph");
  explicit GraphBuilder(const GraphView& from);
  ~GraphBuilder();
  GraphBuilder(GraphBuilder&&) noexcept;
  GraphBuilder& operator=(GraphBuilder&&) noexcept;

  ValueRef add_input(std::string_view name_hint, const TensorInfo& info, Descriptor desc = {});
  // Adds a node calling `op` ("aten.add.Tensor") on positional `args` (omitted trailing ones
  // take their schema defaults; an int where the schema says Scalar or float is converted). The
  // results' metadata comes from the op's meta function. Placed at the end, or before the node
  // insert_before() named. Throws std::invalid_argument naming the op and the argument at fault.
  std::vector<ValueRef> add_node(std::string_view op, std::vector<BuilderArg> args,
                                 std::string_view name_hint = {});
  // Nodes added from now on go right before `n`, a node of the view this builder started from
  // (in the order they are added); insert_at_end() undoes it.
  void insert_before(const NodeView& n);
  void insert_at_end();
  // Every node argument and graph output that reads `old` reads `replacement` instead, except
  // the arguments of the node that produces `replacement` (which may read `old` itself).
  void replace_all_uses(ValueRef old, ValueRef replacement);
  // The graph outputs. Without descriptors, each output keeps the descriptor of its position
  // when the count is unchanged (none otherwise).
  void set_outputs(std::vector<ValueRef> outputs, std::vector<Descriptor> descs = {});
  // Drops nodes none of whose results reach an output (in-place and effectful ops stay).
  void eliminate_dead_code();
  TensorInfo info(ValueRef v) const;
  // The graph so far, verified (the library's verifier: every value defined before use, every
  // argument of its schema's kind, every result's metadata what its meta function computes);
  // throws std::invalid_argument (one line naming the node) otherwise.
  GraphView build() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---- compilers ----

// A compiled graph, called with the graph's inputs in order; returns its outputs. Boxed: it
// owns its inputs and may clear the vector (or release elements) to free memory early, as
// PyTorch's boxed compiled functions do. Must be reentrant (called from several threads at once).
using CompiledGraphFn = std::function<std::vector<Tensor>(std::vector<Tensor>&&)>;
// A compiler: turns one graph (forward, backward or inference) into a CompiledGraphFn. Called once
// per graph of each specialization, possibly from several threads at once.
using CompilerFn = std::function<CompiledGraphFn(const GraphView&)>;

// Registers `compiler` under `name`, replacing an earlier one of that name, so that AotConfig's
// fw_compiler / bw_compiler / inference_compiler strings, GraphRunOptions and the CLI can name it.
// The built-in "interpreter" is registered the same way. Throws std::invalid_argument for an empty
// name or an empty function.
void register_compiler(const std::string& name, CompilerFn compiler);
// The registered names, sorted.
std::vector<std::string> compiler_names();
// The compiler AotConfig and GraphRunOptions name unless told otherwise: $AOTGRAD_COMPILER when
// it is set, else "cpp" (the fusing code generator) when the system C++ compiler ($AOTGRAD_CXX,
// else c++) runs, else "interpreter". Decided once per process, on first use. (The test binary
// sets AOTGRAD_COMPILER=interpreter before main unless the environment chose.)
const std::string& default_compiler();
// The compiler registered as `name`; throws std::invalid_argument naming the known ones.
CompilerFn registered_compiler(const std::string& name);
// registered_compiler(name)(graph): for a compiler that delegates.
CompiledGraphFn compile_with(const std::string& name, const GraphView& graph);

// ---- partitioners ----

// What a partitioner is told about a joint graph (primals..., tangents...) -> (forward
// outputs..., gradients...).
struct JointInfo {
  size_t num_primals = 0;                 // joint inputs before the tangents
  size_t num_fw_outputs = 0;              // joint outputs before the gradients
  double activation_memory_budget = 1.0;  // AotConfig::activation_memory_budget
  // The MemoryBudgetGuard budget alive when each joint node was traced (NaN: none). Read by
  // min_cut_rematerialization_partition.
  std::vector<double> node_budgets;
};

// A partition, in the shape the runtime runs:
//   forward:  (primals...) -> (forward outputs..., saved...)
//   backward: (saved..., tangents...) -> (gradients...)
// The metadata of primals, forward outputs, tangents and gradients must be the joint graph's;
// the saved values are the forward's outputs past the joint's forward outputs, in the order the
// backward takes them. Descriptors are set by the library (saved(k) for saved values).
struct PartitionedGraphs {
  GraphView forward;
  GraphView backward;
  std::vector<std::string> saved_reasons;  // optional, one per saved value: for the saved report
};
using PartitionFn = std::function<PartitionedGraphs(const GraphView& joint, const JointInfo& info)>;

// The built-in partitioners (AotConfig::partitioner "default" and "min_cut").
PartitionedGraphs default_partition(const GraphView& joint, const JointInfo& info);
PartitionedGraphs min_cut_rematerialization_partition(const GraphView& joint,
                                                      const JointInfo& info);

// ---- decompositions ----

// Called by the tracer instead of recording the op, with the call's arguments (one per schema
// argument, defaults filled in); returns the op's results. The ops it calls are recorded (or
// decomposed in turn; a call of the op being decomposed, made inside its own decomposition, is
// recorded as it is).
using DecompositionFn = std::function<std::vector<Tensor>(const std::vector<OpArg>& args)>;
// Op name ("aten.gelu.default") -> its decomposition.
using DecompositionTable = std::map<std::string, DecompositionFn, std::less<>>;

}  // namespace aotgrad
