// CompiledFunction: the cache of specializations and their guards.
//
// Reading guide: call() checks the inputs, builds the call's guard key (aot/guard_key.h: all a
// specialization assumed, as exact bytes) and looks it up in a hash map under a shared lock: the
// hot path, which then runs the entry's Runtime. On a miss (Impl::resolve_miss) it takes the lock
// exclusively and either waits for another thread's compile of the same key (a Pending), or runs
// the function eagerly once cache_size_limit keys are compiled, or registers a Pending and runs
// compile() with no lock held: lower (aot/lower.h, through the on-disk artifact cache,
// cache/artifact_cache.h) → Artifact → instantiate (aot/runtime.h).
// Each graph can be dumped (AOTGRAD_DUMP=dir) and every event logged (AOTGRAD_LOG, aot/log.h).
//
// Thread-safety: Impl's maps, `order` and `limit_reported` are guarded by `mutex`. An Entry is
// immutable once published and never removed, so `last` (an atomic raw pointer) and the pointers
// the hot path returns stay valid while the Impl lives. Counters and `log_cache` are atomics.
// Thread-locals (aot/tracing_state.h) say whether this thread is tracing a compiled function
// (nested calls are traced through) or is inside an aot_module's eager fallback.
#include <atomic>
#include <cstdlib>
#include <future>
#include <iostream>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <unordered_map>

#include "aot/guard_key.h"
#include "aot/log.h"
#include "aot/lower.h"
#include "aot/runtime.h"
#include "aot/tracing_state.h"
#include "aotgrad/autograd.h"
#include "cache/artifact_cache.h"
#include "graph/printer.h"

namespace aotgrad {
namespace {

using aot::InputGuard;

// A compiled specialization and what it assumed, in readable form (for recompile messages).
struct Entry {
  std::vector<InputGuard> guards;
  aot::InputPlan plan;
  bool grad_mode;
  std::string key_extra;
  std::string reason;  // why it was compiled, in one line
  std::shared_ptr<const aot::Artifact> artifact;
  std::shared_ptr<const aot::Runtime> runtime;
};
using EntryPtr = std::shared_ptr<const Entry>;

// A compile in progress: the threads that ask for its key wait on `done`, which holds the entry,
// or null when the compile failed.
struct Pending {
  std::promise<EntryPtr> promise;
  std::shared_future<EntryPtr> done = promise.get_future().share();
};

// Whether `e`, a specialization that serves any storage offsets, serves this call: what a lookup
// under the call's key without offsets finds (the first it tries), compared without building the
// key. Entries are never removed, so a call may test the last one used without the lock.
// Only for inputs of the trivial plan (aot::storages_all_distinct), which `e`'s must be too.
bool serves_without_offsets(const Entry& e, const std::vector<Tensor>& inputs, bool grad_mode,
                            const std::string& key_extra) {
  if (e.grad_mode != grad_mode || e.guards.size() != inputs.size() || e.key_extra != key_extra ||
      !aot::is_trivial_plan(e.plan))
    return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputGuard& g = e.guards[i];
    const Tensor& t = inputs[i];
    if (g.storage_offset != aot::kAnyStorageOffset || g.dtype != t.dtype() ||
        g.requires_grad != t.requires_grad() || g.sizes != t.sizes() || g.strides != t.strides() ||
        g.leaf != aot::is_leaf_requiring_grad(t) || g.view != aot::caller_view_of(t))
      return false;
  }
  return true;
}

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

// Why `e` does not cover this call, in words.
std::string mismatch(const Entry& e, std::vector<InputGuard> g, const aot::InputPlan& plan,
                     bool grad_mode, const std::string& key_extra) {
  for (size_t i = 0; i < g.size() && i < e.guards.size(); ++i)
    if (e.guards[i].storage_offset == aot::kAnyStorageOffset)
      g[i].storage_offset = aot::kAnyStorageOffset;
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

// `reason` on one line: its line breaks become "; ".
std::string flattened(const std::string& reason) {
  std::string s;
  for (size_t i = 0; i < reason.size(); ++i) {
    if (reason[i] != '\n')
      s += reason[i];
    else if (i + 1 < reason.size())
      s += "; ";
  }
  return s;
}

// The call's descriptors: param(fqn) and buffer(fqn) for aot_module's lifted tensors, input(k)
// for the rest (k counts the user's own tensors only, as PyTorch's PlainAOTInput does).
std::vector<Descriptor> input_descriptors(const FlatFunction& f, size_t num_inputs) {
  std::vector<Descriptor> d;
  for (const std::string& n : f.parameter_names) d.push_back(Descriptor::param(n));
  for (const std::string& n : f.buffer_names) d.push_back(Descriptor::buffer(n));
  for (int64_t k = 0; d.size() < num_inputs; ++k) d.push_back(Descriptor::input(k));
  d.resize(num_inputs);
  return d;
}

std::string guards_line(const std::string& fn, size_t index, const aot::Guards& g) {
  std::string line = "guards fn=" + fn + " index=" + std::to_string(index) +
                     " grad_mode=" + (g.grad_mode ? "1" : "0") + " inputs=[";
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    const InputGuard& in = g.inputs[i];
    line += (i ? "; " : "") + std::string(dtype_name(in.dtype)) + shape_to_string(in.sizes) +
            " strides=" + shape_to_string(in.strides) + " offset=" +
            (in.storage_offset == aot::kAnyStorageOffset ? std::string("any")
                                                         : std::to_string(in.storage_offset)) +
            (in.requires_grad ? in.leaf ? " requires_grad leaf" : " requires_grad" : "") +
            aot::describe(in.view);
  }
  line += "] plan=";
  line += g.plan.trivial() && g.plan.unmergeable.empty() ? "trivial" : "aliased";
  return line + " key=" + aot::key_digest(aot::guard_key(g));
}

std::string partition_line(const std::string& fn, size_t index, const AotConfig& cfg,
                           const aot::Artifact& a) {
  return "partition fn=" + fn + " index=" + std::to_string(index) +
         " partitioner=" + cfg.partitioner +
         " budget=" + std::to_string(cfg.activation_memory_budget) +
         " forward_nodes=" + std::to_string(a.forward.nodes().size()) +
         " backward_nodes=" + std::to_string(a.backward.nodes().size()) +
         " saved=" + std::to_string(a.saved.size()) +
         " saved_bytes=" + std::to_string(partition::saved_bytes(a.saved)) +
         " activation_bytes=" + std::to_string(partition::saved_activation_bytes(a.saved));
}

// lower (or the on-disk cache's artifact) → Artifact → instantiate, dumping and logging each
// graph as it is made. Nothing is printed otherwise: graphs() prints on demand, and an artifact
// from the disk cache leaves its joint graph unparsed (aot::LazyGraph).
cache::DiskEvent compile(const AotConfig& cfg, const FlatFunction& f,
                         const std::vector<Tensor>& inputs, size_t index, Entry& entry) {
  aot::TracedFunction traced{f.fn, inputs, entry.key_extra, input_descriptors(f, inputs.size())};
  cache::CachedLowering lowered = cache::ArtifactCache::from_environment().lower(
      traced, cfg, aot::dump_and_log_graphs(cfg.name, index));
  std::shared_ptr<const aot::Artifact> artifact = std::move(lowered.artifact);
  if (const char* dump = std::getenv("AOTGRAD_DUMP"); dump && *dump)
    aot::dump_text(cfg.name, index, "meta", artifact->meta.to_string());
  if (aot::log_enabled(aot::LogTopic::guards))
    aot::log_line(guards_line(cfg.name, index, artifact->guards));
  if (!artifact->is_inference && aot::log_enabled(aot::LogTopic::partition))
    aot::log_line(partition_line(cfg.name, index, cfg, *artifact));
  aot::CompilingScope compiling(cfg.name, index);
  entry.runtime = aot::instantiate(*artifact, aot::named_compilers(cfg));
  entry.artifact = std::move(artifact);
  return lowered.event;
}

}  // namespace

struct CompiledFunction::Impl {
  AotConfig config;
  mutable std::shared_mutex mutex;
  std::unordered_map<std::string, EntryPtr> compiled;
  std::unordered_map<std::string, std::shared_ptr<Pending>> pending;
  std::vector<EntryPtr> order;  // compiled entries, oldest first
  bool limit_reported = false;
  // Keys. A specialization whose trace never read an input's storage offset (its guards hold
  // kAnyStorageOffset) is stored under the call's key without offsets; one that did, under the
  // key with them. A call looks for the first, then (once any specialization needed offsets)
  // for the second.
  std::atomic<bool> offsets_matter{false};
  std::atomic<const Entry*> last{nullptr};  // most recently used
  std::atomic<size_t> hits{0}, misses{0}, compilations{0}, eager_fallbacks{0}, entries{0};
  std::atomic<size_t> disk_hits{0}, disk_misses{0};
  // AOTGRAD_LOG has "cache", as read at the latest miss (hits must not read the environment).
  std::atomic<bool> log_cache{false};

  // The keys of a call: without offsets, and (computed on first use) with them.
  struct CallKeys {
    const std::vector<Tensor>& inputs;
    const aot::InputPlan& plan;
    bool grad_mode;
    const std::string& key_extra;
    std::string any_offset = aot::guard_key(inputs, plan, grad_mode, key_extra, false);
    std::string with_offsets;
    const std::string& exact() {
      if (with_offsets.empty())
        with_offsets = aot::guard_key(inputs, plan, grad_mode, key_extra, true);
      return with_offsets;
    }
  };

  // The entry serving `keys`, and the key it was found under (called with `mutex` held).
  const EntryPtr* find_locked(CallKeys& keys, const std::string** found_key) const {
    if (auto it = compiled.find(keys.any_offset); it != compiled.end()) {
      *found_key = &keys.any_offset;
      return &it->second;
    }
    if (!offsets_matter.load(std::memory_order_acquire)) return nullptr;
    if (auto it = compiled.find(keys.exact()); it != compiled.end()) {
      *found_key = &keys.with_offsets;
      return &it->second;
    }
    return nullptr;
  }

  const Entry* find(CallKeys& keys, const std::string** found_key) const {
    std::shared_lock lock(mutex);
    const EntryPtr* e = find_locked(keys, found_key);
    return e ? e->get() : nullptr;
  }

  std::vector<Tensor> run(const Entry& e, const std::vector<Tensor>& inputs) {
    if (last.load(std::memory_order_relaxed) != &e) last.store(&e, std::memory_order_release);
    return e.runtime->run(inputs);
  }

  void log_event(const char* event, const std::string& key, const std::string& more = "") const {
    aot::log_line("cache fn=" + config.name + " event=" + event + " key=" + aot::key_digest(key) +
                  more);
  }

  std::vector<Tensor> resolve_miss(CallKeys& keys, const std::function<FlatFunction()>& make_fn);
  std::string limit_message(const std::string& reason) const;
  std::vector<Tensor> compile_and_run(const std::string& pending_key, CallKeys& keys,
                                      const std::shared_ptr<Pending>& job, Entry entry,
                                      const std::function<FlatFunction()>& make_fn);
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

std::vector<Tensor> CompiledFunction::Impl::resolve_miss(
    CallKeys& keys, const std::function<FlatFunction()>& make_fn) {
  const std::vector<Tensor>& inputs = keys.inputs;
  bool log_cache_now = aot::log_enabled(aot::LogTopic::cache);
  log_cache.store(log_cache_now, std::memory_order_relaxed);
  std::vector<InputGuard> guards = aot::input_guards(inputs);
  const Entry* previous = last.load(std::memory_order_acquire);
  std::string reason = previous
                           ? mismatch(*previous, guards, keys.plan, keys.grad_mode, keys.key_extra)
                           : std::string("first call");
  // Compiles are first registered under the key without offsets; a call that waited for one
  // whose specialization turned out to need offsets (not this call's) retries under its own
  // key with offsets.
  const std::string* pending_key = &keys.any_offset;
  bool counted = false;
  for (;;) {
    std::shared_ptr<Pending> job;
    bool mine = false;
    {
      std::unique_lock lock(mutex);
      const std::string* found_key = nullptr;
      if (const EntryPtr* e = find_locked(keys, &found_key)) {  // compiled since find()
        EntryPtr entry = *e;
        lock.unlock();
        if (!counted) ++hits;
        if (log_cache_now) log_event(counted ? "waited" : "hit", *found_key);
        return run(*entry, inputs);
      }
      if (!counted) {
        ++misses;
        if (log_cache_now)
          log_event("miss", *pending_key, " reason=\"" + one_line(reason, 200) + "\"");
      }
      counted = true;
      auto it = pending.find(*pending_key);
      if (aot::eager_only_on_this_thread()) {
        // Fall through to the eager call below: neither compile nor wait here.
      } else if (it != pending.end()) {
        job = it->second;
      } else if (compiled.size() + pending.size() < config.cache_size_limit) {
        job = std::make_shared<Pending>();
        pending.emplace(*pending_key, job);
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
      if (previous && aot::log_enabled(aot::LogTopic::recompiles))
        aot::log_line("recompiles fn=" + config.name + " reason=" + flattened(reason));
      return compile_and_run(
          *pending_key, keys, job,
          Entry{guards, keys.plan, keys.grad_mode, keys.key_extra, one_line(reason), {}}, make_fn);
    }
    if (!job) break;
    // The compile we waited for failed (it is not cached): try it here, so this thread gets an
    // error of its own rather than sharing one exception object with the compiling thread.
    if (const EntryPtr& done = job->done.get()) {
      if (!aot::guards_offsets(done->guards)) {
        if (log_cache_now) log_event("waited", *pending_key);
        return run(*done, inputs);
      }
      pending_key = &keys.exact();  // found above if it was this call's offsets
    }
  }
  ++eager_fallbacks;
  if (log_cache_now) log_event("eager_fallback", *pending_key);
  return make_fn().fn(inputs);
}

std::vector<Tensor> CompiledFunction::Impl::compile_and_run(
    const std::string& pending_key, CallKeys& keys, const std::shared_ptr<Pending>& job,
    Entry entry, const std::function<FlatFunction()>& make_fn) {
  size_t index = compilations++;
  EntryPtr published;
  try {
    if (log_cache.load(std::memory_order_relaxed))
      log_event("compile", pending_key, " index=" + std::to_string(index));
    cache::DiskEvent disk = compile(config, make_fn(), keys.inputs, index, entry);
    if (disk == cache::DiskEvent::hit) ++disk_hits;
    if (disk == cache::DiskEvent::miss) ++disk_misses;
    entry.guards = entry.artifact->guards.inputs;  // offsets left out where they do not matter
    published = std::make_shared<const Entry>(std::move(entry));
  } catch (...) {
    {
      std::unique_lock lock(mutex);
      pending.erase(pending_key);
    }
    job->promise.set_value(nullptr);  // waiters retry, each with its own error
    throw;
  }
  bool needs_offsets = aot::guards_offsets(published->guards);
  const std::string& key = needs_offsets ? keys.exact() : keys.any_offset;
  {
    std::unique_lock lock(mutex);
    if (needs_offsets) offsets_matter.store(true, std::memory_order_release);
    compiled.emplace(key, published);
    pending.erase(pending_key);
    order.push_back(published);
    ++entries;
  }
  job->promise.set_value(published);
  return run(*published, keys.inputs);
}

CompiledFunction::CompiledFunction(AotConfig config) : impl_(std::make_shared<Impl>()) {
  impl_->config = std::move(config);
  backends::compiler(impl_->config.fw_compiler);  // fail early on an unknown name
}

std::vector<Tensor> CompiledFunction::call(std::vector<Tensor> inputs, const std::string& key_extra,
                                           const std::function<FlatFunction()>& make_fn) {
  Impl& s = *impl_;
  bool tracing = aot::tracing_on_this_thread();
  check_inputs_real(inputs, key_extra, s.config.name, tracing);
  // Called while another compiled function traces: its inputs are that trace's fakes. Traced
  // through, so its ops land in the outer graph (PyTorch inlines nested compiled calls too).
  if (tracing) return make_fn().fn(inputs);
  const bool grad_mode = autograd::grad_mode_enabled();
  if (const Entry* e = s.last.load(std::memory_order_acquire);
      e && !s.log_cache.load(std::memory_order_relaxed) && aot::storages_all_distinct(inputs) &&
      serves_without_offsets(*e, inputs, grad_mode, key_extra)) {
    ++s.hits;
    return s.run(*e, inputs);
  }
  aot::InputPlan plan = aot::plan_inputs(inputs, s.config.name);
  Impl::CallKeys keys{inputs, plan, grad_mode, key_extra};
  const std::string* found_key = nullptr;
  if (const Entry* e = s.find(keys, &found_key)) {
    ++s.hits;
    if (s.log_cache.load(std::memory_order_relaxed)) s.log_event("hit", *found_key);
    return s.run(*e, inputs);
  }
  return s.resolve_miss(keys, make_fn);
}

CompiledGraphs CompiledFunction::graphs() const {
  const Entry* e = impl_->last.load(std::memory_order_acquire);
  if (!e)
    throw std::logic_error(impl_->config.name +
                           ": graphs() before anything was compiled; call the function first");
  return aot::compiled_graphs(*e->artifact);  // printed now: a compile prints nothing
}

Artifact CompiledFunction::artifact() const {
  const Entry* e = impl_->last.load(std::memory_order_acquire);
  if (!e)
    throw std::logic_error(impl_->config.name +
                           ": artifact() before anything was compiled; call the function first");
  return Artifact(e->artifact);
}

size_t CompiledFunction::num_compilations() const {
  return impl_->entries.load();
}

CacheStats CompiledFunction::stats() const {
  const Impl& s = *impl_;
  return {s.hits.load(),    s.misses.load(),    s.compilations.load(), s.eager_fallbacks.load(),
          s.entries.load(), s.disk_hits.load(), s.disk_misses.load()};
}

const AotConfig& CompiledFunction::config() const {
  return impl_->config;
}

}  // namespace aotgrad
