// GraphProgram: a graph file run through the pipeline aot_function uses.
//
// Reading guide: parse() turns text into a verified forward graph (Impl::forward). compiled()
// lowers it (aot/lower.h, LoadedGraph: the inputs that require grad come from the options) into
// an Artifact and instantiates it with the compiler the options name, once per distinct options;
// run() calls that runtime on detached copies of the inputs and, for a backward run, takes the
// gradients with autograd::grad through its CompiledBackward node, as a compiled function's
// caller would. show() prints the same artifact.
// Thread-safety: the parsed graph is immutable; the cache of compiled runtimes is guarded by a
// mutex (a compile holds it, so each options' runtime is compiled once), and runtimes may be
// called from any number of threads at once.
#include "aotgrad/graph_program.h"

#include <climits>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "aot/graph_function.h"
#include "aot/log.h"
#include "aot/lower.h"
#include "aot/runtime.h"
#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "backends/cpp/cpp_backend.h"
#include "cache/artifact_cache.h"
#include "graph/dot.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "partition/memory_budget.h"
#include "partition/registry.h"

namespace aotgrad {

GraphParseError::GraphParseError(std::string source, int line, int column, std::string message)
    : std::invalid_argument(source + ":" + std::to_string(line) + ":" + std::to_string(column) +
                            ": " + message),
      source_(std::move(source)),
      line_(line),
      column_(column),
      message_(std::move(message)) {}

namespace {

// One options' artifact and runtime.
struct Compiled {
  std::vector<bool> input_rg;
  std::shared_ptr<const aot::Artifact> artifact;
  std::shared_ptr<const aot::Runtime> runtime;
};

}  // namespace

struct GraphProgram::Impl {
  std::string source;
  graph::Graph forward{"forward"};
  std::vector<GraphInputInfo> inputs;
  // A graph with in-place nodes is traced as a function (aot/graph_function.h) rather than
  // lowered as it stands; `written` marks the inputs it writes into.
  bool mutating = false;
  std::vector<bool> written;
  mutable std::mutex mutex;
  mutable std::map<std::string, std::shared_ptr<const Compiled>> compiled;  // by options_key

  std::shared_ptr<const Compiled> get(const GraphRunOptions& options) const;
  std::shared_ptr<const aot::Artifact> lower_graph(const std::vector<bool>& rg, bool backward,
                                                   const AotConfig& config, size_t index) const;
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

// An input the graph writes into is state (batch norm's running statistics, a buffer): it never
// requires grad, as a buffer does not in PyTorch (eagerly, writing into a leaf that requires grad
// is an error).
std::vector<bool> inputs_requiring_grad(const std::vector<GraphInputInfo>& inputs,
                                        const std::vector<bool>& written,
                                        const GraphRunOptions& options) {
  std::vector<bool> rg(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) rg[i] = is_floating(inputs[i].dtype) && !written[i];
  for (size_t i : options.no_grad) {
    if (i >= inputs.size())
      throw std::invalid_argument("no_grad names input " + std::to_string(i) +
                                  ", but the graph has " + std::to_string(inputs.size()) +
                                  " inputs (positions start at 0)");
    rg[i] = false;
  }
  return rg;
}

// What the compiled form depends on: which inputs require grad, the partitioner, the budget and
// the compiler (a forward-only run: only the compiler).
std::string options_key(const std::vector<bool>& input_rg, const GraphRunOptions& o) {
  std::string key = o.compiler + '|';
  if (!o.backward) return key + 'F';
  uint64_t bits;
  std::memcpy(&bits, &o.activation_memory_budget, sizeof bits);
  key += "B|" + o.partitioner + '|' + std::to_string(bits) + '|';
  for (bool b : input_rg) key += b ? '1' : '0';
  return key;
}

// The tangents for the outputs that require grad (in output order); ones where none were given.
std::vector<Tensor> tangents_for(const graph::Graph& forward, const aot::Artifact& a,
                                 const std::vector<Tensor>& given) {
  std::vector<size_t> with_grad;
  for (size_t o = 0; o < a.meta.output_info.size(); ++o)
    if (a.meta.output_info[o].requires_grad) with_grad.push_back(o);
  size_t n_out = forward.outputs().size(), n_tan = with_grad.size();
  if (!given.empty() && given.size() != n_tan && given.size() != n_out)
    throw std::invalid_argument("got " + std::to_string(given.size()) +
                                " tangents; the graph has " + std::to_string(n_tan) +
                                " outputs that require grad (and " + std::to_string(n_out) +
                                " outputs): pass one tangent per output "
                                "that requires grad, one per output, or none for ones");
  std::vector<Tensor> out;
  for (size_t k = 0; k < n_tan; ++k) {
    size_t o = with_grad[k];
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

// Example inputs for tracing a mutating graph: uninitialised tensors of each input's declared
// type, requiring grad as `rg` says. The trace runs on fakes and reads only the examples'
// geometry, so nothing is filled: zero-filling them cost 8% of a one-shot resnet18 `aotgrad run`
// (they are as large as the parameters), and untouched pages are never even faulted in.
std::vector<Tensor> example_inputs(const graph::Graph& g, const std::vector<bool>& rg) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ops::TensorMeta& m = g.value(g.inputs()[i]).meta;
    Tensor t = empty(m.sizes, m.dtype);
    if (rg[i]) t.requires_grad_();
    out.push_back(t);
  }
  return out;
}

// Through the on-disk artifact cache (cache/artifact_cache.h): its key holds the graph's text.
std::shared_ptr<const aot::Artifact> GraphProgram::Impl::lower_graph(const std::vector<bool>& rg,
                                                                     bool backward,
                                                                     const AotConfig& config,
                                                                     size_t index) const {
  aot::GraphHook hook = aot::dump_and_log_graphs(source, index);
  cache::ArtifactCache disk = cache::ArtifactCache::from_environment();
  if (!mutating) return disk.lower(aot::LoadedGraph{forward, rg}, config, hook).artifact;
  // Functionalize on load: trace the graph as a function, under the grad mode of the run.
  aot::TracedFunction traced{aot::graph_as_function(std::make_shared<const graph::Graph>(forward)),
                             example_inputs(forward, rg),
                             "",
                             {}};
  if (backward) {
    EnableGradGuard grad;
    return disk.lower(traced, config, hook).artifact;
  }
  NoGradGuard no_grad;
  return disk.lower(traced, config, hook).artifact;
}

std::shared_ptr<const Compiled> GraphProgram::Impl::get(const GraphRunOptions& options) const {
  std::vector<bool> rg(inputs.size(), false);
  if (options.backward) {
    rg = inputs_requiring_grad(inputs, written, options);
    partition::partitioner(options.partitioner);  // an unknown name fails even with no gradient
    partition::check_memory_budget(options.activation_memory_budget, "activation_memory_budget");
  }
  std::string key = options_key(rg, options);
  std::lock_guard lock(mutex);
  if (auto it = compiled.find(key); it != compiled.end()) return it->second;
  AotConfig config;
  config.name = source;
  config.fw_compiler = options.compiler;
  config.partitioner = options.partitioner;
  config.activation_memory_budget = options.activation_memory_budget;
  size_t index = compiled.size();
  if (aot::log_enabled(aot::LogTopic::cache))
    aot::log_line("cache fn=" + source + " event=compile index=" + std::to_string(index) +
                  " options=" + aot::key_digest(key));
  auto c = std::make_shared<Compiled>();
  c->input_rg = rg;
  c->artifact = lower_graph(rg, options.backward, config, index);
  c->runtime = aot::instantiate(*c->artifact, aot::named_compilers(config));
  compiled.emplace(key, c);
  return c;
}

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
  impl->mutating = aot::has_mutation(impl->forward);
  impl->written = aot::written_inputs(impl->forward);
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
  if (!options.backward && !tangents.empty())
    throw std::invalid_argument("tangents are only read by a backward run");
  std::shared_ptr<const Compiled> c = s.get(options);
  GraphRunResult r;
  // The graph writes into copies of the inputs it mutates; the caller's tensors stay as they
  // were, and the new values come back in r.mutated.
  std::vector<Tensor> args = inputs;
  r.mutated.resize(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i)
    if (s.written[i]) r.mutated[i] = args[i] = inputs[i].detach().clone();
  if (!options.backward) {
    NoGradGuard no_grad;  // the artifact was traced without grad; run it as it was traced
    r.outputs = c->runtime->run(args);
    return r;
  }
  std::vector<Tensor> tan = tangents_for(s.forward, *c->artifact, tangents);
  // Leaves of our own, so that the caller's tensors keep their flags and gain no history.
  std::vector<Tensor> leaves, with_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    leaves.push_back(args[i].detach());
    if (c->input_rg[i]) with_grad.push_back(leaves.back().requires_grad_());
  }
  EnableGradGuard grad_mode;
  std::vector<Tensor> outs = c->runtime->run(leaves);
  std::vector<Tensor> roots;
  for (size_t o = 0; o < outs.size(); ++o)
    if (c->artifact->meta.output_info[o].requires_grad) roots.push_back(outs[o]);
  std::vector<Tensor> grads;
  if (!roots.empty() && !with_grad.empty())
    grads = autograd::grad(roots, with_grad, tan, /*retain_graph=*/false, /*create_graph=*/false,
                           /*allow_unused=*/true);
  r.grads.resize(inputs.size());
  for (size_t i = 0, k = 0; i < inputs.size(); ++i)
    if (c->input_rg[i]) {
      if (k < grads.size()) r.grads[i] = grads[k];
      ++k;
    }
  for (Tensor& t : outs) r.outputs.push_back(t.detach());
  return r;
}

std::string GraphProgram::show(const GraphRunOptions& options) const {
  const Impl& s = *impl_;
  std::ostringstream os;
  os << "# graph " << s.source << "\n" << graph::print_graph(s.forward);
  if (!options.backward) return os.str();

  std::shared_ptr<const Compiled> c = s.get(options);
  const aot::Artifact& a = *c->artifact;
  std::string with_grad;
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    if (!c->input_rg[i]) continue;
    with_grad +=
        (with_grad.empty() ? " " : ", ") + std::to_string(i) + " (%" + s.inputs[i].name + ")";
  }
  os << "\n# inputs that require grad:" << (with_grad.empty() ? " none" : with_grad) << "\n";
  if (a.is_inference) {
    os << "\n# inference graph (no output requires grad: nothing to differentiate)\n"
       << graph::print_graph(a.inference);
    return os.str();
  }
  os << "\n# joint graph\n" << graph::print_graph(a.joint.get());
  os << "\n# forward graph (partitioner " << options.partitioner << ", activation_memory_budget "
     << options.activation_memory_budget << ")\n"
     << graph::print_graph(a.forward);
  os << "\n# backward graph\n" << graph::print_graph(a.backward);
  os << "\n# saved values\n" << partition::saved_report(a.saved);
  return os.str();
}

std::string GraphProgram::show_dot(const GraphRunOptions& options) const {
  const Impl& s = *impl_;
  std::string out = graph::print_dot(s.forward, s.source);
  if (!options.backward) return out;
  const aot::Artifact& a = *s.get(options)->artifact;
  if (a.is_inference) return out + graph::print_dot(a.inference, "inference");
  return out + graph::print_dot(a.forward, "forward") + graph::print_dot(a.backward, "backward");
}

std::string GraphProgram::show_code(const GraphRunOptions& options) const {
  const Impl& s = *impl_;
  std::string out = "// graph " + s.source + "\n" + backends::cpp_code(s.forward);
  if (!options.backward) return out;
  const aot::Artifact& a = *s.get(options)->artifact;
  if (a.is_inference) return out + "\n// inference graph\n" + backends::cpp_code(a.inference);
  return out + "\n// forward graph\n" + backends::cpp_code(a.forward) + "\n// backward graph\n" +
         backends::cpp_code(a.backward);
}

}  // namespace aotgrad
