// CompiledFunction: the cache of specializations, their guards, and the compile pipeline.
//
// Reading guide: call() checks the inputs, builds the call's guard key (aot/guard_key.h: all a
// specialization assumed, as exact bytes) and looks it up in a hash map under a shared lock: the
// hot path. On a miss (Impl::resolve_miss) it takes the lock exclusively and either waits for
// another thread's compile of the same key (a Pending), or runs the function eagerly once
// cache_size_limit keys are compiled, or registers a Pending and runs compile() with no lock
// held: capture → (joint → partition → compile fw/bw) or (inference → compile). Each stage can
// be dumped (AOTGRAD_DUMP=dir). AOTGRAD_LOG=recompiles logs why a call missed.
//
// Thread-safety: Impl's maps, `order` and `limit_reported` are guarded by `mutex`. An Entry is
// immutable once published and never removed, so `last` (an atomic raw pointer) and the pointers
// the hot path returns stay valid while the Impl lives. Counters are atomics. Two thread_locals
// say whether this thread is tracing a compiled function (nested calls are traced through) or
// is inside an aot_module's eager fallback (EagerOnlyScope).
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include "aot/capture.h"
#include "aot/guard_key.h"
#include "aot/joint.h"
#include "aot/runtime.h"
#include "aotgrad/autograd.h"
#include "graph/dce.h"
#include "graph/printer.h"
#include "partition/registry.h"

namespace aotgrad {
namespace {

using aot::InputGuard;

thread_local int t_tracing = 0;     // traces of compiled functions running on this thread
thread_local int t_eager_only = 0;  // live EagerOnlyScopes on this thread

class TracingScope {
 public:
  TracingScope() { ++t_tracing; }
  ~TracingScope() { --t_tracing; }
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;
};

// A compiled specialization and what it assumed, in readable form (for recompile messages).
struct Entry {
  std::vector<InputGuard> guards;
  aot::InputPlan plan;
  bool grad_mode;
  std::string key_extra;
  std::string reason;  // why it was compiled, in one line
  std::shared_ptr<const aot::Specialization> spec;
};
using EntryPtr = std::shared_ptr<const Entry>;

// A compile in progress: the threads that ask for its key wait on `done`, which holds the entry,
// or null when the compile failed.
struct Pending {
  std::promise<EntryPtr> promise;
  std::shared_future<EntryPtr> done = promise.get_future().share();
};

// A defined, real tensor for every input, or one line naming the argument and the fix.
void check_inputs_real(const std::vector<Tensor>& inputs, const std::string& key_extra,
                       const std::string& fn_name, bool tracing) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined())
      throw std::invalid_argument(fn_name + ": " + aot::describe_input(key_extra, i) +
                                  " is an undefined Tensor (default-constructed, no data); pass a "
                                  "defined tensor");
    if (!tracing && inputs[i].is_fake())
      throw std::invalid_argument(
          fn_name + ": " + aot::describe_input(key_extra, i) +
          " is a fake tensor (a tracer's stand-in, with no data) used outside the trace that made "
          "it; pass a real tensor, and do not keep tensors made inside a function while it traces");
  }
}

bool env_has(const char* var, const std::string& word) {
  const char* v = std::getenv(var);
  return v && std::string(v).find(word) != std::string::npos;
}

// Why `e` does not cover this call, in words.
std::string mismatch(const Entry& e, const std::vector<InputGuard>& g, const aot::InputPlan& plan,
                     bool grad_mode, const std::string& key_extra) {
  if (e.grad_mode != grad_mode) return "grad mode changed";
  if (!(e.plan == plan))
    return "inputs repeat or alias differently: was\n" + e.plan.to_string() + "now\n" +
           plan.to_string();
  if (e.key_extra != key_extra) return "non-tensor arguments changed (a number, or a list length)";
  if (e.guards.size() != g.size()) return "number of tensor inputs changed";
  for (size_t i = 0; i < g.size(); ++i)
    if (!(e.guards[i] == g[i]))
      return "input " + std::to_string(i) + " was " + describe(e.guards[i]) + ", now " +
             describe(g[i]);
  return "";
}

// The first line of `reason`, at most `limit` characters: for messages that must stay one line.
std::string one_line(const std::string& reason, size_t limit = 120) {
  std::string s = reason.substr(0, reason.find('\n'));
  return s.size() > limit ? s.substr(0, limit - 3) + "..." : s;
}

void dump(const std::string& fn_name, size_t index, const char* stage, const std::string& text) {
  const char* dir = std::getenv("AOTGRAD_DUMP");
  if (!dir || !*dir) return;
  std::ofstream(std::string(dir) + "/" + fn_name + "_" + std::to_string(index) + "_" + stage +
                ".txt")
      << text;
}

std::shared_ptr<const aot::Specialization> compile(const AotConfig& cfg, const FlatFn& fn,
                                                   const std::vector<Tensor>& inputs,
                                                   const aot::InputPlan& plan, size_t index) {
  auto spec = std::make_shared<aot::Specialization>();
  spec->fn_name = cfg.name;
  spec->plan = plan;
  std::vector<Tensor> graph_inputs = aot::graph_inputs_for(plan, inputs);
  aot::CapturedForward captured = [&] {
    TracingScope tracing;
    return aot::capture_forward(fn, inputs, plan, graph_inputs, cfg);
  }();
  spec->meta = captured.meta;
  spec->text.meta = captured.meta.to_string();
  spec->num_graph_outputs = captured.graph.outputs().size();
  for (graph::ValueId v : captured.graph.outputs())
    spec->output_metas.push_back(captured.graph.value(v).meta);
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
    spec->inference = backends::compiler(
        cfg.inference_compiler.empty() ? cfg.fw_compiler : cfg.inference_compiler)(inference);
    return spec;
  }

  aot::JointGraph joint = aot::build_joint(captured.graph, captured.value_requires_grad);
  spec->text.joint = graph::print_graph(joint.graph);
  dump(cfg.name, index, "joint", spec->text.joint);
  partition::Partition part =
      partition::run_partitioner(cfg.partitioner, joint.graph,
                                 {joint.num_primals, joint.num_fw_outputs, captured.node_budgets},
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
  spec->backward = backends::compiler(cfg.bw_compiler.empty() ? cfg.fw_compiler
                                                              : cfg.bw_compiler)(part.backward);
  return spec;
}

}  // namespace

namespace aot_detail {
EagerOnlyScope::EagerOnlyScope() {
  ++t_eager_only;
}
EagerOnlyScope::~EagerOnlyScope() {
  --t_eager_only;
}
}  // namespace aot_detail

struct CompiledFunction::Impl {
  AotConfig config;
  mutable std::shared_mutex mutex;
  std::unordered_map<std::string, EntryPtr> compiled;
  std::unordered_map<std::string, std::shared_ptr<Pending>> pending;
  std::vector<EntryPtr> order;  // compiled entries, oldest first
  bool limit_reported = false;
  std::atomic<const Entry*> last{nullptr};  // most recently used
  std::atomic<size_t> hits{0}, misses{0}, compilations{0}, eager_fallbacks{0}, entries{0};

  const Entry* find(const std::string& key) const {
    std::shared_lock lock(mutex);
    auto it = compiled.find(key);
    return it == compiled.end() ? nullptr : it->second.get();
  }

  std::vector<Tensor> run(const Entry& e, const std::vector<Tensor>& inputs) {
    if (last.load(std::memory_order_relaxed) != &e) last.store(&e, std::memory_order_release);
    return aot::run_specialization(e.spec, inputs);
  }

  std::vector<Tensor> resolve_miss(std::string key, const std::vector<Tensor>& inputs,
                                   const aot::InputPlan& plan, bool grad_mode,
                                   const std::string& key_extra,
                                   const std::function<FlatFn()>& make_fn);
  std::string limit_message(const std::string& reason) const;
  std::vector<Tensor> compile_and_run(const std::string& key, const std::shared_ptr<Pending>& job,
                                      Entry entry, const std::vector<Tensor>& inputs,
                                      const std::function<FlatFn()>& make_fn);
};

// What the once-per-function message says when cache_size_limit is reached (called under lock).
std::string CompiledFunction::Impl::limit_message(const std::string& reason) const {
  std::string m = "[aotgrad] " + config.name + ": reached cache_size_limit (" +
                  std::to_string(config.cache_size_limit) +
                  "); calls with new input signatures run eagerly from now on (compiled ones "
                  "still run compiled). Why it recompiled:\n";
  for (size_t i = 0; i < order.size(); ++i)
    m += "  specialization " + std::to_string(i) + ": " + one_line(order[i]->reason) + "\n";
  m += "  this call: " + one_line(reason) +
       "\nRaise AotConfig::cache_size_limit if these signatures are expected; "
       "AOTGRAD_LOG=recompiles logs every recompile as it happens.\n";
  return m;
}

std::vector<Tensor> CompiledFunction::Impl::resolve_miss(std::string key,
                                                         const std::vector<Tensor>& inputs,
                                                         const aot::InputPlan& plan, bool grad_mode,
                                                         const std::string& key_extra,
                                                         const std::function<FlatFn()>& make_fn) {
  std::vector<InputGuard> guards = aot::input_guards(inputs);
  const Entry* previous = last.load(std::memory_order_acquire);
  std::string reason = previous ? mismatch(*previous, guards, plan, grad_mode, key_extra)
                                : std::string("first call");
  bool counted = false;
  for (;;) {
    std::shared_ptr<Pending> job;
    bool mine = false;
    {
      std::unique_lock lock(mutex);
      if (auto it = compiled.find(key); it != compiled.end()) {  // compiled since find()
        lock.unlock();
        if (!counted) ++hits;
        return run(*it->second, inputs);
      }
      if (!counted) ++misses;
      counted = true;
      auto it = pending.find(key);
      if (t_eager_only > 0) {
        // Fall through to the eager call below: neither compile nor wait here.
      } else if (it != pending.end()) {
        job = it->second;
      } else if (compiled.size() + pending.size() < config.cache_size_limit) {
        job = std::make_shared<Pending>();
        pending.emplace(key, job);
        mine = true;
      } else if (config.on_cache_limit == CacheLimitAction::error) {
        throw std::runtime_error(
            config.name + ": cache_size_limit (" + std::to_string(config.cache_size_limit) +
            ") reached; this call needs a new specialization (" + one_line(reason, 90) +
            "): raise AotConfig::cache_size_limit, or set on_cache_limit = "
            "CacheLimitAction::fallback_to_eager to run such calls eagerly");
      } else if (!limit_reported) {
        limit_reported = true;
        std::cerr << limit_message(reason);
      }
    }
    if (mine) {
      if (previous && env_has("AOTGRAD_LOG", "recompiles"))
        std::cerr << "[aotgrad] recompiling " << config.name << ": " << reason << "\n";
      return compile_and_run(key, job,
                             Entry{guards, plan, grad_mode, key_extra, one_line(reason), {}},
                             inputs, make_fn);
    }
    if (!job) break;
    // The compile we waited for failed (it is not cached): try it here, so this thread gets an
    // error of its own rather than sharing one exception object with the compiling thread.
    if (const EntryPtr& done = job->done.get()) return run(*done, inputs);
  }
  ++eager_fallbacks;
  return make_fn()(inputs);
}

std::vector<Tensor> CompiledFunction::Impl::compile_and_run(
    const std::string& key, const std::shared_ptr<Pending>& job, Entry entry,
    const std::vector<Tensor>& inputs, const std::function<FlatFn()>& make_fn) {
  size_t index = compilations++;
  EntryPtr published;
  try {
    entry.spec = compile(config, make_fn(), inputs, entry.plan, index);
    published = std::make_shared<const Entry>(std::move(entry));
  } catch (...) {
    {
      std::unique_lock lock(mutex);
      pending.erase(key);
    }
    job->promise.set_value(nullptr);  // waiters retry, each with its own error
    throw;
  }
  {
    std::unique_lock lock(mutex);
    compiled.emplace(key, published);
    pending.erase(key);
    order.push_back(published);
    ++entries;
  }
  job->promise.set_value(published);
  return run(*published, inputs);
}

CompiledFunction::CompiledFunction(AotConfig config) : impl_(std::make_shared<Impl>()) {
  impl_->config = std::move(config);
  backends::compiler(impl_->config.fw_compiler);  // fail early on an unknown name
}

std::vector<Tensor> CompiledFunction::call(std::vector<Tensor> inputs, const std::string& key_extra,
                                           const std::function<FlatFn()>& make_fn) {
  Impl& s = *impl_;
  bool tracing = t_tracing > 0;
  check_inputs_real(inputs, key_extra, s.config.name, tracing);
  // Called while another compiled function traces: its inputs are that trace's fakes. Traced
  // through, so its ops land in the outer graph (PyTorch inlines nested compiled calls too).
  if (tracing) return make_fn()(inputs);
  aot::InputPlan plan = aot::plan_inputs(inputs, s.config.name);
  bool grad_mode = autograd::grad_mode_enabled();
  std::string key = aot::guard_key(inputs, plan, grad_mode, key_extra);
  if (const Entry* e = s.find(key)) {
    ++s.hits;
    return s.run(*e, inputs);
  }
  return s.resolve_miss(std::move(key), inputs, plan, grad_mode, key_extra, make_fn);
}

CompiledGraphs CompiledFunction::graphs() const {
  const Entry* e = impl_->last.load(std::memory_order_acquire);
  if (!e)
    throw std::logic_error(impl_->config.name +
                           ": graphs() before anything was compiled; call the function first");
  return e->spec->text;
}

size_t CompiledFunction::num_compilations() const {
  return impl_->entries.load();
}

CacheStats CompiledFunction::stats() const {
  const Impl& s = *impl_;
  return {s.hits.load(), s.misses.load(), s.compilations.load(), s.eager_fallbacks.load(),
          s.entries.load()};
}

const AotConfig& CompiledFunction::config() const {
  return impl_->config;
}

}  // namespace aotgrad
