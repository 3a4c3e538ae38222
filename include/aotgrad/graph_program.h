// Graph files as programs: what the `aotgrad` command-line program runs (docs/cli.md).
//
// A GraphProgram is a forward graph in the text format (docs/ir.md), parsed and verified once. It
// runs through aot_function's pipeline (lower → Artifact → instantiate, docs/architecture.md),
// either forward only or as joint graph -> partition -> forward + backward, with the gradients of
// its inputs; each distinct GraphRunOptions is compiled once and kept.
//
// Which inputs require grad in a backward run: every floating input (f32, f64, f16, bf16) that the
// graph does not write into and whose position is not in GraphRunOptions::no_grad. A graph value
// then requires grad when any tensor argument of its node does, the node's op has a VJP rule, and
// the value is floating — the rule eager autograd follows.
//
// Thread-safety: a GraphProgram is immutable once parsed (its cache of compiled runtimes is
// guarded); run(), show(), inputs() and check_input() may be called from any number of threads at
// once, on one program or on copies (which share it). Every input must be a defined, real tensor
// (not a tracer's fake).
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "aotgrad/compiler.h"
#include "aotgrad/tensor.h"

namespace aotgrad {

// An error in a graph text at a 1-based line and column: syntax or names, or a node that does not
// verify (then the location is its statement's). what() reads "SOURCE:LINE:COLUMN: MESSAGE", the
// form compilers use, so editors can jump to it.
class GraphParseError : public std::invalid_argument {
 public:
  GraphParseError(std::string source, int line, int column, std::string message);
  const std::string& source() const { return source_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  std::string source_;
  int line_;
  int column_;
  std::string message_;
};

struct GraphRunOptions {
  // Build the joint graph, partition it and run forward then backward.
  bool backward = false;
  // Partitioner name ("default", "min_cut"); see partition/registry.h.
  std::string partitioner = "default";
  // In [0, 1]; read by the min_cut partitioner (1 = runtime-optimal, 0 = save only inputs).
  double activation_memory_budget = 1.0;
  // Input positions that never require grad, even when floating.
  std::vector<size_t> no_grad;
  // The compiler every graph is handed to (compiler.h: "cpp" or "interpreter").
  std::string compiler = default_compiler();
};

struct GraphRunResult {
  std::vector<Tensor> outputs;
  // One slot per graph input: its gradient, or an undefined Tensor for inputs that do not require
  // grad (or whose gradient does not depend on any output). Empty for forward-only runs.
  std::vector<Tensor> grads;
  // One slot per graph input: its value after the run when the graph writes into it in place
  // (the caller's tensor is left as it was), else an undefined Tensor.
  std::vector<Tensor> mutated;
};

// What one graph input expects, for messages and for `aotgrad show`.
struct GraphInputInfo {
  std::string name;  // without the leading '%'
  DType dtype = DType::f32;
  IntList sizes;
};

class GraphProgram {
 public:
  // Parses and verifies `text`. `source` names the text in errors (a file path, or "<graph>").
  // Throws GraphParseError for syntax errors and for a node that does not verify (shapes that
  // disagree with its op), std::invalid_argument for a graph that fails verification elsewhere
  // (an output). Any text gives a program or one of these, one line.
  // A graph may mutate (in-place ops and writes through views, as make_fx records them): it is
  // then functionalized by tracing it as a function, exactly as aot_function traces C++ code, and
  // its writes into inputs become mutations the run applies. An input the graph writes into never
  // requires grad (it is state, like batch norm's running statistics).
  static GraphProgram parse(std::string_view text, const std::string& source = "<graph>");
  // Reads the file at `path` and parses it; throws std::invalid_argument if it cannot be read.
  static GraphProgram load(const std::string& path);

  const std::vector<GraphInputInfo>& inputs() const;
  size_t num_outputs() const;

  // Throws std::invalid_argument when `t` does not fit input `index` (dtype or shape), naming the
  // input by position and name, what was expected and what was given.
  void check_input(size_t index, const Tensor& t) const;

  // Runs the graph on `inputs` (checked as check_input does, plus their count). With
  // options.backward, `tangents` are the gradients of the outputs that require grad, either one
  // per such output or one per output (entries for outputs without grad are then ignored); empty
  // means ones.
  GraphRunResult run(const std::vector<Tensor>& inputs, const GraphRunOptions& options = {},
                     const std::vector<Tensor>& tangents = {}) const;

  // The text `aotgrad show` prints: the forward graph; with options.backward also the joint,
  // partitioned forward and backward graphs and the saved-value report with its totals.
  std::string show(const GraphRunOptions& options = {}) const;
  // The same graphs in Graphviz's DOT language (`aotgrad show --dot`): the graph as loaded, and
  // with options.backward the partitioned forward and backward graphs, one digraph each.
  std::string show_dot(const GraphRunOptions& options = {}) const;
  // What the cpp compiler makes of the same graphs (`aotgrad show --code`): its schedule and the
  // generated C++ source, for the graph as loaded and with options.backward for the partitioned
  // forward and backward graphs. Runs no compiler.
  std::string show_code(const GraphRunOptions& options = {}) const;

 private:
  struct Impl;
  explicit GraphProgram(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace aotgrad
