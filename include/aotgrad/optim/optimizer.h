// The optimizer base of torch::optim (LibTorch 1.13), in aotgrad's namespace: parameter groups
// with per-group options, per-parameter state, zero_grad, step(closure).
//
//   optim::Adam opt(model->parameters(), optim::AdamOptions(2e-4).betas({0.5, 0.5}));
//   opt.zero_grad(); loss.backward(); opt.step();
//   opt.param_groups()[0].options().set_lr(1e-4);
//
// Each optimizer's options class (AdamOptions, SGDOptions, ...) has LibTorch's builder methods:
// `o.lr(0.1)` sets and returns the options, `o.lr()` reads. A param group without options takes
// a copy of the optimizer's defaults when it is added. State (momentum buffers, moments) lives in
// state(), keyed by param_key(p), and is created on a parameter's first step with the
// parameter's dtype. step() updates parameters in place under NoGradGuard and skips those whose
// .grad() is undefined, as torch does.
//
// Thread-safety: an optimizer is one object to mutate from one thread at a time (as a
// std::vector); different optimizers are independent.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aotgrad/tensor.h"

#include "aotgrad/options_arg.h"

namespace aotgrad::optim {

// One option value of a checkpoint: bools are 0/1, a tuple's elements are "name.0", "name.1".
using OptionValues = std::vector<std::pair<std::string, double>>;

// The options of one param group. Each optimizer derives its own (SGDOptions, AdamOptions, ...).
class OptimizerOptions {
 public:
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
  // Every option by name, in a fixed order (what a checkpoint stores), and the setter for one;
  // set_value returns false for a name this kind of options does not have.
  virtual OptionValues values() const = 0;
  virtual bool set_value(std::string_view name, double value) = 0;
};

// The slots of one parameter's state, for checkpoints: tensors (undefined ones are not saved; a
// required one must be in a checkpoint that has this state) and integer counters (the step).
struct StateSlots {
  struct TensorSlot {
    const char* name;
    Tensor* tensor;
    bool required;
  };
  std::vector<TensorSlot> tensors;
  std::vector<std::pair<const char*, int64_t*>> counters;
};

class OptimizerParamState {
 public:
  virtual ~OptimizerParamState() = default;
  virtual std::unique_ptr<OptimizerParamState> clone() const = 0;
  virtual StateSlots slots() = 0;
};

// Parameters sharing one set of options (torch.optim's param_groups).
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}  // NOLINT
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& other);
  OptimizerParamGroup& operator=(const OptimizerParamGroup& other);
  OptimizerParamGroup(OptimizerParamGroup&&) = default;
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) = default;

  bool has_options() const { return options_ != nullptr; }
  // Throws std::logic_error when the group has no options (before it is added to an optimizer).
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> options) { options_ = std::move(options); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

// The key of a parameter in Optimizer::state(): its identity (as LibTorch keys by TensorImpl).
std::string param_key(const Tensor& p);

class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;
  using StateMap = std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>>;

  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Runs `closure` (with grad enabled) when given, then one update; returns the closure's loss
  // (undefined without a closure).
  virtual Tensor step(LossClosure closure = nullptr) = 0;
  // The optimizer's class name ("Adam"), for errors and checkpoints.
  virtual std::string type_name() const = 0;

  // Adds a group; one without options gets a copy of defaults(). A parameter already in a
  // group, a non-leaf or non-floating tensor, or options of another optimizer's kind, throws.
  void add_param_group(const OptimizerParamGroup& group);
  // Appends parameters to the first group.
  void add_parameters(const std::vector<Tensor>& params);
  // Zeroes every parameter's .grad() in place (LibTorch 1.13's zero_grad), or with
  // set_to_none = true clears it (PyTorch 2's default).
  void zero_grad(bool set_to_none = false);

  // Every parameter of every group, in group order.
  std::vector<Tensor> parameters() const;
  size_t size() const;  // the number of parameters
  OptimizerOptions& defaults() noexcept { return *defaults_; }
  const OptimizerOptions& defaults() const noexcept { return *defaults_; }
  std::vector<OptimizerParamGroup>& param_groups() noexcept { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const noexcept { return param_groups_; }
  StateMap& state() noexcept { return state_; }
  const StateMap& state() const noexcept { return state_; }
  // A fresh state object of this optimizer's kind (what step() creates on a first step).
  virtual std::unique_ptr<OptimizerParamState> make_state() const = 0;
  // Throws std::invalid_argument when `options` is not of this optimizer's kind or out of range.
  virtual void check_options(const OptimizerOptions& options) const = 0;

 protected:
  // Keeps `groups` for add_pending_groups(), which each derived constructor calls once its
  // check_options and type_name are callable.
  Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  void add_pending_groups();
  // Runs the closure if any; the caller then updates under NoGradGuard.
  static Tensor run_closure(const LossClosure& closure);
  // The state of `p`, created by make_state() on first use; `S` is this optimizer's state type.
  template <typename S>
  S& state_of(const Tensor& p) {
    std::unique_ptr<OptimizerParamState>& s = state_[param_key(p)];
    if (!s) s = make_state();
    return static_cast<S&>(*s);
  }

 private:
  std::unique_ptr<OptimizerOptions> defaults_;
  std::vector<OptimizerParamGroup> param_groups_;
  std::vector<OptimizerParamGroup> pending_;
  StateMap state_;
};

// CRTP helpers giving each options and state class its clone().
template <typename Derived>
class OptimizerCloneableOptions : public OptimizerOptions {
 public:
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

template <typename Derived>
class OptimizerCloneableParamState : public OptimizerParamState {
 public:
  std::unique_ptr<OptimizerParamState> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

}  // namespace aotgrad::optim
