// aot_module: compile a module's forward with aot_function, its parameters and buffers lifted to
// graph inputs.
//
//   auto block = std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024);  // or a holder
//   auto compiled = aot_module(block);
//   Tensor y = compiled(x);           // traces block->forward(x) on the first call
//   y.sum().backward();               // fills block's parameter grads exactly as eager would
//
// Graph inputs are, in order: every distinct parameter (named_parameters() order), every
// distinct buffer (named_buffers() order), then the user inputs flattened as aot_function does.
// While tracing, the module's slots hold the traced stand-ins and are restored afterwards, so
// the module is never left holding fake tensors. Buffers the forward mutates (BatchNorm's running
// statistics in training mode) are written back into the caller's buffers after every call, by
// aot_function's input-mutation handling. A specialization is chosen by the usual guards (shapes,
// dtypes, strides, requires_grad, grad mode) plus the training flag of every submodule, so
// model.eval() recompiles once and then hits its own cache entry.
//
// The module's structure must not change after aot_module() (registering new slots is fine; it
// simply recompiles), and its forward must use only its parameters, buffers and arguments: a
// tensor captured from elsewhere is rejected as aot_function rejects it.
//
// Cache and concurrency: as aot_function (aot.h): cache_size_limit, stats(), and calls from any
// number of threads at once. One process-wide reader/writer lock guards the module slots of every
// aot_module: a trace writes its stand-ins into the slots under the write lock, so calls that
// read the slots (every call, briefly, to lift them; an eager fallback, for its whole forward)
// wait for a trace in progress, never for the rest of a compile (joint, partition, backend).
// Inside an eager fallback, nested compiled calls that would compile run eagerly
// (aot_detail::EagerOnlyScope). Do not call the module's own forward() from another thread, nor
// reassign its slots, while an aot_module of it may be tracing.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aotgrad/aot.h"
#include "aotgrad/nn/module.h"

namespace aotgrad {
namespace nn_detail {

// The tensors a module call lifts to graph inputs, the slots each came from, and the part of
// the cache key they imply (aot.h's 'M' record: counts and training flags). Reads the slots
// under the slot lock.
struct LiftedState {
  std::vector<Tensor> tensors;
  std::vector<std::vector<Tensor*>> slots;
  size_t num_parameters = 0;  // parameters first, then buffers
  std::string key;
};
LiftedState lift(nn::Module& module);
// The fully-qualified names of the distinct parameters and buffers lift() returns, in its order.
void lifted_names(nn::Module& module, std::vector<std::string>& parameters,
                  std::vector<std::string>& buffers);

// Runs `forward` with inputs[i] in every slot of slots[i] (i < slots.size()). When the lifted
// inputs are a trace's fakes, swaps them in under the slot write lock and puts the originals
// back afterwards; a buffer slot the forward reassigned (`buf = buf + 1`) becomes a mutation of
// the buffer (copy_ of the new value, as PyTorch turns such assignments into buffer mutations),
// and a reassigned parameter slot is an error. Otherwise (an eager fallback: the slots already
// hold them) runs under the read lock and an EagerOnlyScope.
// `names` are the lifted tensors' fully-qualified names (parameters, then buffers), for errors.
std::vector<Tensor> run_with_slots(const std::vector<std::vector<Tensor*>>& slots,
                                   size_t num_parameters, const std::vector<std::string>& names,
                                   const std::vector<Tensor>& inputs,
                                   const std::function<std::vector<Tensor>()>& forward);

// The flat function of (lifted tensors, user inputs) that runs the module's forward with the
// lifted tensors in their slots (run_with_slots): what aot_module's call and export's module
// calls (export_detail::lifted_module_call) share. `forward_of(model, inputs, first)` calls the
// forward on the user inputs from inputs[first] on and returns its flat results. Reads the
// names, so it is built once per compile, not per call.
template <typename M, typename Forward>
FlatFunction lifted_function(const std::shared_ptr<M>& model,
                             std::vector<std::vector<Tensor*>> slots, size_t num_parameters,
                             Forward forward_of) {
  FlatFunction f;
  lifted_names(*model, f.parameter_names, f.buffer_names);
  auto shared_slots = std::make_shared<std::vector<std::vector<Tensor*>>>(std::move(slots));
  auto names = std::make_shared<std::vector<std::string>>(f.parameter_names);
  names->insert(names->end(), f.buffer_names.begin(), f.buffer_names.end());
  f.fn = [model, shared_slots, num_parameters, names,
          forward_of](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
    return run_with_slots(*shared_slots, num_parameters, *names, inputs,
                          [&] { return forward_of(*model, inputs, shared_slots->size()); });
  };
  return f;
}

// A forward_of for lifted_function: M::forward on `originals` with their tensors replaced by the
// graph inputs from inputs[first] on (aot_function's flattening of each argument).
template <typename M, typename... Args>
auto forward_of_args(std::shared_ptr<std::tuple<Args...>> originals) {
  using R = std::decay_t<decltype(std::declval<M&>().forward(std::declval<const Args&>()...))>;
  return [originals](M& m, const std::vector<Tensor>& inputs, size_t first) {
    size_t pos = first;
    auto rebuilt = std::apply(
        [&](const auto&... orig) {
          return std::tuple<Args...>{aot_detail::rebuild_arg(orig, inputs, pos)...};
        },
        *originals);
    return aot_detail::Outputs<R>::flatten(
        std::apply([&](const auto&... a) { return m.forward(a...); }, rebuilt));
  };
}

}  // namespace nn_detail

template <typename M>
class AotModule {
 public:
  AotModule(std::shared_ptr<M> model, AotConfig config)
      : model_(std::move(model)), engine_(std::make_shared<CompiledFunction>(std::move(config))) {}

  template <typename... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<decltype(std::declval<M&>().forward(args...))>;
    nn_detail::LiftedState lifted = nn_detail::lift(*model_);
    std::vector<Tensor> flat = std::move(lifted.tensors);
    std::string key = std::move(lifted.key);
    (aot_detail::flatten_arg(args, flat, key), ...);
    auto make_fn = [&]() -> FlatFunction {
      return nn_detail::lifted_function(
          model_, std::move(lifted.slots), lifted.num_parameters,
          nn_detail::forward_of_args<M>(std::make_shared<std::tuple<Args...>>(args...)));
    };
    return aot_detail::Outputs<R>::unflatten(engine_->call(std::move(flat), key, make_fn));
  }

  CompiledGraphs graphs() const { return engine_->graphs(); }
  Artifact artifact() const { return engine_->artifact(); }
  size_t num_compilations() const { return engine_->num_compilations(); }
  CacheStats stats() const { return engine_->stats(); }
  M& module() const { return *model_; }
  const std::shared_ptr<M>& module_ptr() const { return model_; }

 private:
  std::shared_ptr<M> model_;
  std::shared_ptr<CompiledFunction> engine_;
};

template <typename M>
AotModule<M> aot_module(std::shared_ptr<M> model, AotConfig config = {}) {
  if (!model) throw std::invalid_argument("aot_module: the model is null");
  if (config.name == AotConfig{}.name) config.name = model->type_name();
  return AotModule<M>(std::move(model), std::move(config));
}

// The module a holder holds: aot_module(nn::Linear(3, 4)), aot_module(net) for a TORCH_MODULE.
template <typename M>
AotModule<M> aot_module(const nn::ModuleHolder<M>& holder, AotConfig config = {}) {
  return aot_module(holder.ptr(), std::move(config));
}

}  // namespace aotgrad
