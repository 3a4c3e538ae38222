// aot_function: trace a C++ function once, derive its backward, partition, compile, and call the
// compiled pair behind an autograd node so it behaves like the eager function.
//
//   auto step = aotgrad::aot_function([](const Tensor& x, const Tensor& w) {
//     return matmul(x, w).tanh().sum();
//   });
//   Tensor loss = step(x, w);   // compiles on the first call; recompiles when input shapes,
//   loss.backward();            // dtypes, strides, requires_grad or grad mode change
//
// Arguments may be Tensor, std::vector<Tensor> and arithmetic values (baked into the graph;
// another value, compared bit for bit and by type, recompiles). Results may be Tensor,
// std::vector<Tensor>, std::pair or std::tuple of Tensors.
//
// Specializations. Each call is keyed by everything the compiled graphs assumed (its guards):
// dtype, sizes, strides and requires_grad of every tensor, which tensors repeat or overlap (and
// the geometry of the base that overlapping ones are rebuilt from), grad mode, the storage
// offset of every tensor only when the trace depended on it (an as_strided of an input,
// t_()/as_strided_() on one, or overlapping inputs; so batches sliced from one tensor
// share a specialization, as with PyTorch's guards), the length of every tensor list, and the
// exact type and bits of every number (so 1e-7 and 2e-7 differ, as do -0.0 and 0.0, and 1 and
// true). A function that branches on x.storage_offset() itself is not guarded on it. The key is
// hashed; a call whose key was compiled before runs that specialization. At most
// AotConfig::cache_size_limit keys are compiled (like torch._dynamo.config.cache_size_limit);
// calls with a new key after that run the function eagerly (or throw, with on_cache_limit =
// error), and a message saying why the function recompiled is printed once. stats() counts hits,
// misses, compilations and eager fallbacks.
//
// Concurrency. An AotFunction (and every copy of it, which shares its cache) may be called from any
// number of threads at once, and graphs(), num_compilations() and stats() may be called while
// calls are in flight. A key compiles once: threads asking for a key another thread is compiling
// wait for that compile; threads whose key is already compiled run without waiting for it. A
// compile that fails is not cached: each thread that waited for it tries again, and gets its own
// error. Specializations are immutable and held by shared_ptr, so a compile never
// disturbs calls in flight, and a backward may run on any thread, during later calls. Tensors
// themselves are not synchronized (as in PyTorch): threads may share input tensors they only read
// (weights), and each thread's outputs and gradients are its own; leaves shared by threads that
// run backward at once accumulate .grad() under a lock, in an unspecified order. The function
// itself may run on several threads at once (traces of different keys, eager fallbacks), so any
// state it changes needs its own lock.
//
// Nesting. A compiled function called while another one traces (its inputs are the tracer's fake
// tensors) is traced through: its ops become part of the outer graph, as PyTorch inlines nested
// compiled calls. A fake tensor passed outside any trace, or an undefined Tensor, is an error that
// names the argument.
//
// Pipeline. Every specialization is lowered (trace → joint → partition) into an Artifact
// (aotgrad/artifact.h: plain data, serializable) and instantiated into a runtime; artifact()
// returns the most recent one, and instantiate() builds a runtime from any artifact.
//
// Logging. AOTGRAD_LOG (read at each cache miss, never on the hot path; hits are logged as the
// latest miss read it) is a list of topics separated by commas or spaces, or "all":
// recompiles (why a call compiled again), cache (each hit, miss, compile and eager fallback),
// guards (what a new specialization assumed), graphs (each graph as lowering makes it) and
// partition (what the partitioner saved); each event is one line "[aotgrad] TOPIC fn=NAME ...".
// AOTGRAD_DUMP=dir writes every graph of every compile to dir/NAME_INDEX_STAGE.txt, creating dir.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

#include "aotgrad/artifact.h"
#include "aotgrad/compiler.h"
#include "aotgrad/tensor.h"

namespace aotgrad {

// What a call with a new key does once cache_size_limit keys are compiled.
enum class CacheLimitAction {
  fallback_to_eager,  // run the function eagerly (PyTorch's default); compiled keys still hit
  error,              // throw std::runtime_error naming the function, the limit and the fix
};

// Compilers and the partitioner are chosen by name (registered ones: compiler.h,
// register_compiler) or supplied as callables (compiler.h; PyTorch's fw_compiler, bw_compiler,
// inference_compiler, partition_fn). A callable, when set, is used instead of the name; the
// artifact still records the names, so instantiate(artifact) without a config uses those.
struct AotConfig {
  std::string fw_compiler = default_compiler();  // "cpp", or "interpreter" without a C++ compiler
  std::string bw_compiler;                       // empty: same as fw_compiler
  std::string inference_compiler;                // empty: same as fw_compiler
  std::string partitioner = "default";           // or "min_cut"
  // Set: used instead of the name beside it. The backward (inference) graph goes to
  // bw_compiler_fn (inference_compiler_fn), else the compiler bw_compiler (inference_compiler)
  // names, else the forward's: fw_compiler_fn, else the one fw_compiler names.
  CompilerFn fw_compiler_fn, bw_compiler_fn, inference_compiler_fn;
  PartitionFn partition_fn;  // set: splits joint graphs instead of `partitioner`
  // Ops the tracer replaces by these functions instead of recording them (PyTorch's
  // decompositions), in forward and backward graphs.
  DecompositionTable decompositions;
  // min_cut only: fraction in [0, 1] of the runtime-optimal saved activation bytes to keep.
  double activation_memory_budget = 1.0;
  std::string name = "fn";  // used in error messages and logs
  // Inference graphs write input mutations with copy_ inside the graph instead of returning the
  // new values for the runtime to copy (PyTorch's keep_inference_input_mutations).
  bool keep_inference_input_mutations = false;
  // How many specializations one compiled function compiles at most (PyTorch's
  // torch._dynamo.config.cache_size_limit); 0 runs every call eagerly.
  size_t cache_size_limit = 8;
  CacheLimitAction on_cache_limit = CacheLimitAction::fallback_to_eager;
  // Replace each attention composite, softmax(masked_fill((q @ k^T) * scale, mask, -inf)) @ v,
  // by one fused aotgrad.masked_attention node before the joint graph is built (as Inductor's
  // attention patterns do), so its forward and backward each run one kernel and the heads are
  // saved where they lie, not the [*, T, S] weights (graph/fuse_attention.h). Results equal the
  // composite's up to the products' summation order. Unset: on when the forward graph goes to the
  // "cpp" compiler by name (Inductor's default), off for the interpreter and a CompilerFn.
  std::optional<bool> fuse_attention;
};

// Counts of a compiled function's calls since it was created. Every call that is not traced
// through (see "Nesting" above) is exactly one hit or one miss.
struct CacheStats {
  size_t hits = 0;             // the call's key was compiled when it looked
  size_t misses = 0;           // it compiled the key, waited for another thread's compile of it,
                               // or ran eagerly
  size_t compilations = 0;     // compiles started (a compile that threw counts too)
  size_t eager_fallbacks = 0;  // misses run eagerly: cache_size_limit was reached (or the call
                               // was made inside an aot_module's eager fallback)
  size_t entries = 0;          // specializations held (compiled and not failed)
  // Compiles that found their Artifact in the on-disk cache (docs/caching.md): traced, then
  // instantiated from the stored artifact without building the joint or partitioning.
  size_t disk_hits = 0;
  size_t disk_misses = 0;  // compiles that lowered with the on-disk cache on (and stored)
};

using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// What a call traces: its flattened function and, for aot_module, the fully-qualified names of
// the parameters and buffers that lead its flat inputs (their descriptors: param(fqn),
// buffer(fqn); the other inputs are input(k)).
struct FlatFunction {
  FlatFn fn;
  std::vector<std::string> parameter_names, buffer_names;
};

// A runtime instantiated from an Artifact: call it with the flat tensor inputs of a call the
// artifact covers (its guards: dtypes, geometry, requires_grad, aliasing, grad mode; a mismatch
// throws std::invalid_argument naming the first difference). Results, mutations of the inputs and
// gradients are those of the compiled function the artifact came from. Thread-safe.
class CompiledArtifact {
 public:
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  const Artifact& artifact() const { return artifact_; }

 private:
  friend CompiledArtifact instantiate(const Artifact&, const AotConfig&);
  CompiledArtifact(Artifact a, std::shared_ptr<const void> runtime, std::string key)
      : artifact_(std::move(a)), runtime_(std::move(runtime)), key_(std::move(key)) {}
  Artifact artifact_;
  std::shared_ptr<const void> runtime_;  // an aot::Runtime
  std::string key_;                      // the guard key of the calls it covers
};

// Compiles the artifact's graphs with the compilers `compilers` names (fw_compiler,
// bw_compiler, inference_compiler; its other fields are not read).
CompiledArtifact instantiate(const Artifact& artifact, const AotConfig& compilers);
// ... with the compilers the artifact was lowered for.
CompiledArtifact instantiate(const Artifact& artifact);

// The type-erased engine behind AotFunction and AotModule: a cache of compiled specializations
// keyed by what they assumed (guards), and the runtime that runs them. Thread-safe (see
// "Concurrency" above).
class CompiledFunction {
 public:
  explicit CompiledFunction(AotConfig config);
  // `key_extra` encodes the non-tensor parts of the call (the records written by
  // aot_detail::flatten_arg, after aot_module's record of lifted tensors); `make_fn` is asked for
  // the flattened function only when it must be traced or run eagerly.
  std::vector<Tensor> call(std::vector<Tensor> inputs, const std::string& key_extra,
                           const std::function<FlatFunction()>& make_fn);
  // The most recently used specialization, printed at each call (a compile prints nothing);
  // throws if nothing was compiled yet.
  CompiledGraphs graphs() const;
  Artifact artifact() const;
  size_t num_compilations() const;  // specializations held (stats().entries)
  CacheStats stats() const;
  const AotConfig& config() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

namespace aot_detail {

template <typename T>
struct is_tensor_vector : std::false_type {};
template <>
struct is_tensor_vector<std::vector<Tensor>> : std::true_type {};

// The cache key of a call's non-tensor parts is a sequence of records, one per argument, each
// naming its kind so that positions can be recovered for error messages:
//   'T'                                   a Tensor
//   'L' u64 n                             a std::vector<Tensor> of n tensors
//   'S' u8 len, type name, u8 n, n bytes  a number: its exact type and the bytes of its value
//   'M' u64 params, u64 buffers, ...      aot_module's lifted tensors (first, before arguments)
// Integers are little-endian host bytes; the encoding is prefix-free, so equal keys mean equal
// calls.
inline void append_u64(std::string& key, uint64_t v) {
  char bytes[sizeof v];
  std::memcpy(bytes, &v, sizeof v);
  key.append(bytes, sizeof v);
}

template <typename T>
void flatten_arg(const T& a, std::vector<Tensor>& flat, std::string& key) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    flat.push_back(a);
    key += 'T';
  } else if constexpr (is_tensor_vector<D>::value) {
    flat.insert(flat.end(), a.begin(), a.end());
    key += 'L';
    append_u64(key, a.size());
  } else if constexpr (std::is_arithmetic_v<D>) {
    // The mangled type name tells long from long long and bool from char; the value's bits tell
    // -0.0 from 0.0 and NaN payloads apart. x87 long double has 6 padding bytes, left out.
    constexpr size_t bytes =
        std::is_floating_point_v<D> && std::numeric_limits<D>::digits == 64 ? 10 : sizeof(D);
    const char* type = typeid(D).name();
    size_t type_len = std::strlen(type);
    key += 'S';
    key += static_cast<char>(type_len);
    key.append(type, type_len);
    key += static_cast<char>(bytes);
    char value[sizeof(D)];
    std::memcpy(value, &a, sizeof(D));
    key.append(value, bytes);
  } else {
    static_assert(sizeof(D) == 0,
                  "aot_function arguments must be Tensor, std::vector<Tensor> or numbers");
  }
}

// While one is alive on a thread, compiled calls made on that thread never compile nor wait for
// another thread's compile: a call whose key is not compiled yet runs the function eagerly
// (counted as a miss and an eager fallback). aot_module holds one while it runs a module's
// forward eagerly with the module's parameter slots read-locked: a trace there would have to
// write them, and waiting there could deadlock with a trace that reads them.
class EagerOnlyScope {
 public:
  EagerOnlyScope();
  ~EagerOnlyScope();
  EagerOnlyScope(const EagerOnlyScope&) = delete;
  EagerOnlyScope& operator=(const EagerOnlyScope&) = delete;
};

template <typename T>
T rebuild_arg(const T& original, const std::vector<Tensor>& flat, size_t& pos) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    return flat.at(pos++);
  } else if constexpr (is_tensor_vector<D>::value) {
    std::vector<Tensor> v(flat.begin() + pos, flat.begin() + pos + original.size());
    pos += original.size();
    return v;
  } else {
    return original;
  }
}

template <typename R>
struct Outputs;
template <>
struct Outputs<Tensor> {
  static std::vector<Tensor> flatten(const Tensor& t) { return {t}; }
  static Tensor unflatten(std::vector<Tensor>&& v) { return std::move(v.at(0)); }
};
template <>
struct Outputs<std::vector<Tensor>> {
  static std::vector<Tensor> flatten(const std::vector<Tensor>& v) { return v; }
  static std::vector<Tensor> unflatten(std::vector<Tensor>&& v) { return std::move(v); }
};
template <typename... Ts>
struct Outputs<std::tuple<Ts...>> {
  static_assert((std::is_same_v<Ts, Tensor> && ...), "tuple results must hold Tensors");
  static std::vector<Tensor> flatten(const std::tuple<Ts...>& t) {
    return std::apply([](const auto&... x) { return std::vector<Tensor>{x...}; }, t);
  }
  static std::tuple<Ts...> unflatten(std::vector<Tensor>&& v) {
    return unflatten_impl(v, std::index_sequence_for<Ts...>{});
  }
  template <size_t... I>
  static std::tuple<Ts...> unflatten_impl(std::vector<Tensor>& v, std::index_sequence<I...>) {
    return std::tuple<Ts...>{std::move(v.at(I))...};
  }
};
template <>
struct Outputs<std::pair<Tensor, Tensor>> {
  static std::vector<Tensor> flatten(const std::pair<Tensor, Tensor>& p) {
    return {p.first, p.second};
  }
  static std::pair<Tensor, Tensor> unflatten(std::vector<Tensor>&& v) {
    return {std::move(v.at(0)), std::move(v.at(1))};
  }
};

}  // namespace aot_detail

// A callable with `fn`'s signature that runs the compiled graphs.
template <typename F>
class AotFunction {
 public:
  AotFunction(F fn, AotConfig config)
      : fn_(std::make_shared<F>(std::move(fn))),
        engine_(std::make_shared<CompiledFunction>(std::move(config))) {}

  template <typename... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<std::invoke_result_t<F&, const Args&...>>;
    std::vector<Tensor> flat;
    flat.reserve(sizeof...(Args));  // one tensor per argument is the usual case
    std::string key;
    (aot_detail::flatten_arg(args, flat, key), ...);
    // Two pointers captured: the std::function below holds them inline, with no allocation.
    const std::tuple<const Args&...> arg_refs(args...);
    auto make_fn = [this, &arg_refs]() -> FlatFunction {
      auto fn = fn_;
      auto originals = std::make_shared<std::tuple<Args...>>(arg_refs);
      return {[fn, originals](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
        size_t pos = 0;
        // Braced init evaluates left to right, matching the flattening order.
        auto rebuilt = std::apply(
            [&](const auto&... orig) {
              return std::tuple<Args...>{aot_detail::rebuild_arg(orig, inputs, pos)...};
            },
            *originals);
        return aot_detail::Outputs<R>::flatten(std::apply(*fn, rebuilt));
      }};
    };
    return aot_detail::Outputs<R>::unflatten(engine_->call(std::move(flat), key, make_fn));
  }

  CompiledGraphs graphs() const { return engine_->graphs(); }
  Artifact artifact() const { return engine_->artifact(); }
  size_t num_compilations() const { return engine_->num_compilations(); }
  CacheStats stats() const { return engine_->stats(); }
  CompiledFunction& engine() const { return *engine_; }

 private:
  std::shared_ptr<F> fn_;
  std::shared_ptr<CompiledFunction> engine_;
};

template <typename F>
AotFunction<F> aot_function(F fn, AotConfig config = {}) {
  return AotFunction<F>(std::move(fn), std::move(config));
}

}  // namespace aotgrad
