// aot_module: compile a module's forward with aot_function, its parameters and buffers lifted to
// graph inputs.
//
//   auto block = std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024);
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
#pragma once

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
// the cache key they imply (counts and training flags).
struct LiftedState {
  std::vector<Tensor> tensors;
  std::vector<std::vector<Tensor*>> slots;
  std::string key;
};
LiftedState lift(nn::Module& module);

// Puts inputs[i] into every slot of slots[i] and puts the originals back when destroyed.
class SlotSwap {
 public:
  SlotSwap(const std::vector<std::vector<Tensor*>>& slots, const std::vector<Tensor>& inputs);
  ~SlotSwap();
  SlotSwap(const SlotSwap&) = delete;
  SlotSwap& operator=(const SlotSwap&) = delete;

 private:
  const std::vector<std::vector<Tensor*>>& slots_;
  std::vector<Tensor> saved_;
};

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
    auto make_fn = [&]() -> FlatFn {
      auto model = model_;
      auto slots = std::make_shared<std::vector<std::vector<Tensor*>>>(std::move(lifted.slots));
      auto originals = std::make_shared<std::tuple<Args...>>(args...);
      return [model, slots, originals](const std::vector<Tensor>& inputs) -> std::vector<Tensor> {
        nn_detail::SlotSwap swap(*slots, inputs);
        size_t pos = slots->size();
        auto rebuilt = std::apply(
            [&](const auto&... orig) {
              return std::tuple<Args...>{aot_detail::rebuild_arg(orig, inputs, pos)...};
            },
            *originals);
        return aot_detail::Outputs<R>::flatten(
            std::apply([&](const auto&... a) { return model->forward(a...); }, rebuilt));
      };
    };
    return aot_detail::Outputs<R>::unflatten(engine_->call(std::move(flat), key, make_fn));
  }

  CompiledGraphs graphs() const { return engine_->graphs(); }
  size_t num_compilations() const { return engine_->num_compilations(); }
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

}  // namespace aotgrad
