// GraphProgram: a graph file run the way aot_function runs a traced function.
//
// Reading guide: parse() turns text into a verified forward graph (Impl::forward). run() either
// interprets that graph directly, or builds the training pair exactly as aot_function.cpp does —
// build_joint (aot/joint.h) from the values that require grad, run_partitioner, and the
// interpreter on the partitioned forward and backward — then calls forward, splits its results
// into user outputs and saved values, and calls backward with (saved..., tangents...).
// Thread-safety: a GraphProgram is immutable after parse(); run() and show() build everything
// they use (joint, partition, compiled callables) in the call, so several threads may share one
// program.
#include "aotgrad/graph_program.h"

#include <climits>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "aot/joint.h"
#include "aotgrad/ops.h"
#include "backends/backend.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "partition/registry.h"

namespace aotgrad {

GraphParseError::GraphParseError(std::string source, int line, int column, std::string message)
    : std::invalid_argument(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                            ": " + message),
      source_(std::move(source)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

struct GraphProgram::Impl {
  std::string source;
  graph::Graph forward{"forward"};
  std::vector<GraphInputInfo> inputs;
};

namespace {

std::string type_text(DType dtype, const IntList& sizes) {
  return std::string(dtype_name(dtype)) + shape_to_string(sizes);
}

// parse_graph reports "line L, column C: what"; re-throw it in the SOURCE:L:C: form.
[[noreturn]] void rethrow_parse_error(const std::string& source, const std::invalid_argument& e) {
  int line = 0, column = 0, consumed = 0;
  const char* what = e.what();
  if (std::sscanf(what, "line %d, column %d: %n", &line, &column, &consumed) == 2 && consumed > 0)
    throw GraphParseError(source, line, column, what + consumed);
  throw std::invalid_argument(source + ": " + what);
}

// The interpreter runs functional graphs only; in-place nodes would need functionalization,
// which happens when tracing, not when loading text.
void reject_inplace(const graph::Graph& g, const std::string& source) {
  for (const graph::Node& n : g.nodes()) {
    if (!n.op->is_inplace()) continue;
    std::string name =
        n.outputs.empty() ? std::string("(no result)") : "%" + g.value(n.outputs[0]).name;
    std::string fix =
        n.op->functional_variant.empty()
            ? "rewrite it with functional ops"
            : "use the functional op " + std::string(n.op->functional_variant) + " instead";
    throw std::invalid_argument(source + ": node " + name + " = " + std::string(n.op->name) +
                                " mutates its input; graph programs must be functional: " + fix);
  }
}

// Which graph values require grad, from which inputs do (see graph_program.h).
std::vector<bool> values_requiring_grad(const graph::Graph& g, const std::vector<bool>& input_rg) {
  std::vector<bool> rg(g.values().size(), false);
  for (size_t i = 0; i < g.inputs().size(); ++i) rg[g.inputs()[i].index] = input_rg[i];
  for (const graph::Node& n : g.nodes()) {
    bool any = false;
    for (const graph::NodeArg& a : n.args)
      for (graph::ValueId v : graph::arg_values(a)) any = any || rg[v.index];
    if (!any || !n.op->vjp) continue;
    for (graph::ValueId o : n.outputs) rg[o.index] = is_floating(g.value(o).meta.dtype);
  }
  return rg;
}

std::vector<bool> inputs_requiring_grad(const std::vector<GraphInputInfo>& inputs,
                                        const GraphRunOptions& options) {
  std::vector<bool> rg(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) rg[i] = is_floating(inputs[i].dtype);
  for (size_t i : options.no_grad) {
    if (i >= inputs.size())
      throw std::invalid_argument("no_grad names input " + std::to_string(i) +
                                  ", but the graph has " + std::to_string(inputs.size()) +
                                  " inputs (positions start at 0)");
    rg[i] = false;
  }
  return rg;
}

struct TrainingPair {
  aot::JointGraph joint;
  partition::Partition part;
  std::vector<bool> input_rg;
};

TrainingPair build_training_pair(const graph::Graph& forward,
                                 const std::vector<GraphInputInfo>& inputs,
                                 const GraphRunOptions& options) {
  TrainingPair p;
  p.input_rg = inputs_requiring_grad(inputs, options);
  p.joint = aot::build_joint(forward, values_requiring_grad(forward, p.input_rg));
  p.part = partition::run_partitioner(
      options.partitioner, p.joint.graph, {p.joint.num_primals, p.joint.num_fw_outputs, {}},
      {.activation_memory_budget = options.activation_memory_budget});
  return p;
}

// The tangents the backward graph takes, in joint tangent order; ones where none were given.
std::vector<Tensor> tangents_for(const graph::Graph& forward, const aot::JointGraph& joint,
                                 const std::vector<Tensor>& given) {
  size_t n_out = forward.outputs().size(), n_tan = joint.tangent_of_output.size();
  if (!given.empty() && given.size() != n_tan && given.size() != n_out)
    throw std::invalid_argument("got " + std::to_string(given.size()) +
                                " tangents; the graph has " + std::to_string(n_tan) +
                                " outputs that require grad (and " + std::to_string(n_out) +
                                " outputs): pass one tangent per output "
                                "that requires grad, one per output, or none for ones");
  std::vector<Tensor> out;
  for (size_t k = 0; k < n_tan; ++k) {
    size_t o = joint.tangent_of_output[k];
    const ops::TensorMeta& m = forward.value(forward.outputs()[o]).meta;
    if (given.empty()) {
      out.push_back(ones(m.sizes, m.dtype));
      continue;
    }
    size_t pos = given.size() == n_tan ? k : o;
    const Tensor& t = given[pos];
    if (!t.defined() || t.dtype() != m.dtype || t.sizes() != m.sizes)
      throw std::invalid_argument(
          "tangent " + std::to_string(pos) + " (for output " + std::to_string(o) + ", %" +
          forward.value(forward.outputs()[o]).name + "): expected " + type_text(m.dtype, m.sizes) +
          ", got " + (t.defined() ? type_text(t.dtype(), t.sizes()) : std::string("nothing")));
    out.push_back(t);
  }
  return out;
}

}  // namespace

GraphProgram GraphProgram::parse(std::string_view text, const std::string& source) {
  auto impl = std::make_shared<Impl>();
  impl->source = source;
  std::vector<graph::SourceLocation> where;  // of each node's statement
  try {
    impl->forward = graph::parse_graph(text, &where);
  } catch (const std::invalid_argument& e) {
    rethrow_parse_error(source, e);
  }
  try {
    graph::verify_graph(impl->forward);
  } catch (const graph::VerifyError& e) {
    if (std::optional<size_t> k = e.node(); k && *k < where.size())
      throw GraphParseError(source, static_cast<int>(std::min<size_t>(where[*k].line, INT_MAX)),
                            static_cast<int>(std::min<size_t>(where[*k].column, INT_MAX)),
                            e.what());
    throw std::invalid_argument(source + ": " + e.what());
  }
  reject_inplace(impl->forward, source);
  for (graph::ValueId v : impl->forward.inputs()) {
    const graph::Value& val = impl->forward.value(v);
    impl->inputs.push_back({val.name, val.meta.dtype, val.meta.sizes});
  }
  return GraphProgram(std::move(impl));
}

GraphProgram GraphProgram::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot open the graph file (does it exist?)");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse(ss.str(), path);
}

const std::vector<GraphInputInfo>& GraphProgram::inputs() const {
  return impl_->inputs;
}

size_t GraphProgram::num_outputs() const {
  return impl_->forward.outputs().size();
}

void GraphProgram::check_input(size_t index, const Tensor& t) const {
  if (index >= impl_->inputs.size())
    throw std::invalid_argument("graph " + impl_->source + " takes " +
                                std::to_string(impl_->inputs.size()) +
                                " inputs; there is no input " + std::to_string(index));
  const GraphInputInfo& in = impl_->inputs[index];
  std::string expected = type_text(in.dtype, in.sizes);
  if (!t.defined())
    throw std::invalid_argument("input " + std::to_string(index) + " (%" + in.name +
                                "): expected " + expected + ", got an undefined Tensor");
  if (t.is_fake())
    throw std::invalid_argument("input " + std::to_string(index) + " (%" + in.name +
                                "): expected " + expected +
                                ", got a fake tensor (a tracer's stand-in, with no data); pass a "
                                "real tensor");
  if (t.dtype() != in.dtype || t.sizes() != in.sizes)
    throw std::invalid_argument("input " + std::to_string(index) + " (%" + in.name +
                                "): expected " + expected + ", got " +
                                type_text(t.dtype(), t.sizes()));
}

GraphRunResult GraphProgram::run(const std::vector<Tensor>& inputs, const GraphRunOptions& options,
                                 const std::vector<Tensor>& tangents) const {
  const Impl& s = *impl_;
  if (inputs.size() != s.inputs.size())
    throw std::invalid_argument("graph " + s.source + " takes " + std::to_string(s.inputs.size()) +
                                " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) check_input(i, inputs[i]);
  backends::Compiler compile = backends::compiler("interpreter");
  GraphRunResult r;
  if (!options.backward) {
    if (!tangents.empty()) throw std::invalid_argument("tangents are only read by a backward run");
    r.outputs = compile(s.forward)(std::vector<Tensor>(inputs));
    return r;
  }

  TrainingPair p = build_training_pair(s.forward, s.inputs, options);
  std::vector<Tensor> tan = tangents_for(s.forward, p.joint, tangents);
  std::vector<Tensor> fw = compile(p.part.forward)(std::vector<Tensor>(inputs));
  size_t n_out = p.joint.num_fw_outputs;
  r.outputs.assign(fw.begin(), fw.begin() + static_cast<std::ptrdiff_t>(n_out));
  std::vector<Tensor> bw_args(fw.begin() + static_cast<std::ptrdiff_t>(n_out), fw.end());
  bw_args.insert(bw_args.end(), tan.begin(), tan.end());
  std::vector<Tensor> grads = compile(p.part.backward)(std::move(bw_args));
  r.grads.resize(inputs.size());
  for (size_t k = 0; k < p.joint.grad_of_primal.size() && k < grads.size(); ++k)
    r.grads[p.joint.grad_of_primal[k]] = grads[k];
  return r;
}

std::string GraphProgram::show(const GraphRunOptions& options) const {
  const Impl& s = *impl_;
  std::ostringstream os;
  os << "# graph " << s.source << "\n" << graph::print_graph(s.forward);
  if (!options.backward) return os.str();

  TrainingPair p = build_training_pair(s.forward, s.inputs, options);
  std::string with_grad;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (!p.input_rg[i]) continue;
    with_grad +=
        (with_grad.empty() ? " " : ", ") + std::to_string(i) + " (%" + s.inputs[i].name + ")";
  }
  os << "\n# inputs that require grad:" << (with_grad.empty() ? " none" : with_grad) << "\n";
  os << "\n# joint graph\n" << graph::print_graph(p.joint.graph);
  os << "\n# forward graph (partitioner " << options.partitioner << ", activation_memory_budget "
     << options.activation_memory_budget << ")\n"
     << graph::print_graph(p.part.forward);
  os << "\n# backward graph\n" << graph::print_graph(p.part.backward);
  os << "\n# saved values\n" << p.part.report();
  return os.str();
}

}  // namespace aotgrad
