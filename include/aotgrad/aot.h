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
// another value recompiles). Results may be Tensor, std::vector<Tensor>, std::pair or
// std::tuple of Tensors.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

struct AotConfig {
  std::string fw_compiler = "interpreter";
  std::string bw_compiler;         // empty: same as fw_compiler
  std::string inference_compiler;  // empty: same as fw_compiler
  std::string partitioner = "default";  // or "min_cut"
  // min_cut only: fraction in [0, 1] of the runtime-optimal saved activation bytes to keep.
  double activation_memory_budget = 1.0;
  std::string name = "fn";         // used in error messages and logs
  // Inference graphs write input mutations with copy_ inside the graph instead of returning the
  // new values for the runtime to copy (PyTorch's keep_inference_input_mutations).
  bool keep_inference_input_mutations = false;
};

// The graphs of one compiled specialization, as text, and what the forward saves for backward.
struct CompiledGraphs {
  bool is_inference = false;
  std::string forward, backward, joint, inference;
  std::string saved_report;
  std::string meta;  // ViewAndMutationMeta: input mutations and output aliasing
  size_t num_saved = 0;
  size_t saved_bytes = 0;             // all saved values
  size_t saved_activation_bytes = 0;  // saved values that are not graph inputs
};

using FlatFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

// The type-erased engine behind AotFunction: a cache of compiled specializations keyed by what
// they assumed (guards), and the runtime that runs them.
class CompiledFunction {
 public:
  explicit CompiledFunction(AotConfig config);
  // `key_extra` encodes the non-tensor parts of the call; `make_fn` is asked for the flattened
  // function only when a new specialization must be compiled.
  std::vector<Tensor> call(std::vector<Tensor> inputs, const std::string& key_extra,
                           const std::function<FlatFn()>& make_fn);
  // The most recently used specialization; throws if nothing was compiled yet.
  CompiledGraphs graphs() const;
  size_t num_compilations() const;
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

template <typename T>
void flatten_arg(const T& a, std::vector<Tensor>& flat, std::string& key) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    flat.push_back(a);
    key += 'T';
  } else if constexpr (is_tensor_vector<D>::value) {
    flat.insert(flat.end(), a.begin(), a.end());
    key += 'L' + std::to_string(a.size()) + ';';
  } else if constexpr (std::is_arithmetic_v<D>) {
    key += 'S' + std::to_string(a) + ';';
  } else {
    static_assert(sizeof(D) == 0, "aot_function arguments must be Tensor, std::vector<Tensor> or numbers");
  }
}

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
  static std::vector<Tensor> flatten(const std::pair<Tensor, Tensor>& p) { return {p.first, p.second}; }
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
    std::string key;
    (aot_detail::flatten_arg(args, flat, key), ...);
    auto make_fn = [&]() -> FlatFn {
      auto fn = fn_;
      auto originals = std::make_shared<std::tuple<Args...>>(args...);
      return [fn, originals](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
        size_t pos = 0;
        // Braced init evaluates left to right, matching the flattening order.
        auto rebuilt = std::apply(
            [&](const auto&... orig) {
              return std::tuple<Args...>{aot_detail::rebuild_arg(orig, inputs, pos)...};
            },
            *originals);
        return aot_detail::Outputs<R>::flatten(std::apply(*fn, rebuilt));
      };
    };
    return aot_detail::Outputs<R>::unflatten(engine_->call(std::move(flat), key, make_fn));
  }

  CompiledGraphs graphs() const { return engine_->graphs(); }
  size_t num_compilations() const { return engine_->num_compilations(); }
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
