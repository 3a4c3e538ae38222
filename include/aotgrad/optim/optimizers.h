// The optimizers of torch::optim (LibTorch 1.13): SGD, Adam, AdamW, RMSprop and Adagrad, with
// their options builders and per-parameter state classes. Each update performs the tensor ops of
// torch/optim/*.py (1.13, _single_tensor_*) in the same order, so results agree with PyTorch to
// the last bit where the kernels do (tests/optim compares five steps against PyTorch's numbers).
//
//   optim::SGD sgd(net->parameters(), /*lr=*/0.01);   // SGDOptions converts from the lr
//   optim::Adam adam(gen->parameters(), optim::AdamOptions(2e-4).betas({0.5, 0.5}));
//
// `maximize` (PyTorch 1.13's Python option, not LibTorch's) negates the gradient first.
// See optimizer.h for param groups, state and thread-safety.
#pragma once

#include <tuple>

#include "aotgrad/optim/optimizer.h"

namespace aotgrad::optim {

// ---- SGD ----

struct SGDOptions : public OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's (`SGD opt(params, 0.01)`)
  AOTGRAD_ARG(double, lr);
  AOTGRAD_ARG(double, momentum) = 0;
  AOTGRAD_ARG(double, dampening) = 0;
  AOTGRAD_ARG(double, weight_decay) = 0;
  AOTGRAD_ARG(bool, nesterov) = false;
  AOTGRAD_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  OptionValues values() const override;
  bool set_value(std::string_view name, double value) override;
};

struct SGDParamState : public OptimizerCloneableParamState<SGDParamState> {
  AOTGRAD_ARG(Tensor, momentum_buffer);

 public:
  StateSlots slots() override { return {{{"momentum_buffer", &momentum_buffer_, true}}, {}}; }
};

// d = g + weight_decay * p; with momentum: buf = d on the first step, else
// buf = momentum * buf + (1 - dampening) * d; d = nesterov ? d + momentum * buf : buf;
// p -= lr * d.
class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> groups, SGDOptions defaults);
  SGD(std::vector<Tensor> params, SGDOptions defaults);
  Tensor step(LossClosure closure = nullptr) override;
  std::string type_name() const override { return "SGD"; }
  std::unique_ptr<OptimizerParamState> make_state() const override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// ---- Adam and AdamW ----

using betas_t = std::tuple<double, double>;

// Adam's and AdamW's options: the same fields, but AdamW's weight_decay defaults to 1e-2 and is
// decoupled (applied to the parameter, not added to the gradient).
struct AdamOptions : public OptimizerCloneableOptions<AdamOptions> {
  AdamOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  AOTGRAD_ARG(double, lr);
  AOTGRAD_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  AOTGRAD_ARG(double, eps) = 1e-8;
  AOTGRAD_ARG(double, weight_decay) = 0;
  AOTGRAD_ARG(bool, amsgrad) = false;
  AOTGRAD_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  OptionValues values() const override;
  bool set_value(std::string_view name, double value) override;
};

struct AdamWOptions : public OptimizerCloneableOptions<AdamWOptions> {
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  AOTGRAD_ARG(double, lr);
  AOTGRAD_ARG(betas_t, betas) = std::make_tuple(0.9, 0.999);
  AOTGRAD_ARG(double, eps) = 1e-8;
  AOTGRAD_ARG(double, weight_decay) = 1e-2;
  AOTGRAD_ARG(bool, amsgrad) = false;
  AOTGRAD_ARG(bool, maximize) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  OptionValues values() const override;
  bool set_value(std::string_view name, double value) override;
};

struct AdamParamState : public OptimizerCloneableParamState<AdamParamState> {
  AOTGRAD_ARG(int64_t, step) = 0;
  AOTGRAD_ARG(Tensor, exp_avg);
  AOTGRAD_ARG(Tensor, exp_avg_sq);
  AOTGRAD_ARG(Tensor, max_exp_avg_sq);

 public:
  StateSlots slots() override;
};

// AdamW's state is Adam's.
using AdamWParamState = AdamParamState;

// g += weight_decay * p (L2 penalty); the moments with bias correction; p -= step_size * m / d.
class Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> groups, AdamOptions defaults = {});
  Adam(std::vector<Tensor> params, AdamOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;
  std::string type_name() const override { return "Adam"; }
  std::unique_ptr<OptimizerParamState> make_state() const override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// Adam with decoupled weight decay: p *= 1 - lr * weight_decay, then Adam's step.
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> groups, AdamWOptions defaults = {});
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;
  std::string type_name() const override { return "AdamW"; }
  std::unique_ptr<OptimizerParamState> make_state() const override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// ---- RMSprop ----

struct RMSpropOptions : public OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  AOTGRAD_ARG(double, lr);
  AOTGRAD_ARG(double, alpha) = 0.99;
  AOTGRAD_ARG(double, eps) = 1e-8;
  AOTGRAD_ARG(double, weight_decay) = 0;
  AOTGRAD_ARG(double, momentum) = 0;
  AOTGRAD_ARG(bool, centered) = false;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  OptionValues values() const override;
  bool set_value(std::string_view name, double value) override;
};

struct RMSpropParamState : public OptimizerCloneableParamState<RMSpropParamState> {
  AOTGRAD_ARG(int64_t, step) = 0;
  AOTGRAD_ARG(Tensor, square_avg);
  AOTGRAD_ARG(Tensor, momentum_buffer);
  AOTGRAD_ARG(Tensor, grad_avg);

 public:
  StateSlots slots() override;
};

// sq = alpha * sq + (1 - alpha) * g^2; avg = sqrt(sq [- mean(g)^2 if centered]) + eps;
// with momentum buf = momentum * buf + g / avg, p -= lr * buf; else p -= lr * g / avg.
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> groups, RMSpropOptions defaults = {});
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;
  std::string type_name() const override { return "RMSprop"; }
  std::unique_ptr<OptimizerParamState> make_state() const override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

// ---- Adagrad ----

struct AdagradOptions : public OptimizerCloneableOptions<AdagradOptions> {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}  // NOLINT: implicit, as LibTorch's
  AOTGRAD_ARG(double, lr);
  AOTGRAD_ARG(double, lr_decay) = 0;
  AOTGRAD_ARG(double, weight_decay) = 0;
  AOTGRAD_ARG(double, initial_accumulator_value) = 0;
  AOTGRAD_ARG(double, eps) = 1e-10;

 public:
  double get_lr() const override { return lr_; }
  void set_lr(double lr) override { lr_ = lr; }
  OptionValues values() const override;
  bool set_value(std::string_view name, double value) override;
};

struct AdagradParamState : public OptimizerCloneableParamState<AdagradParamState> {
  AOTGRAD_ARG(Tensor, sum);
  AOTGRAD_ARG(int64_t, step) = 0;

 public:
  StateSlots slots() override { return {{{"sum", &sum_, true}}, {{"step", &step_}}}; }
};

// sum starts at initial_accumulator_value; sum += g^2; p -= lr / (1 + (step - 1) * lr_decay) *
// g / (sqrt(sum) + eps).
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<OptimizerParamGroup> groups, AdagradOptions defaults = {});
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {});
  Tensor step(LossClosure closure = nullptr) override;
  std::string type_name() const override { return "Adagrad"; }
  std::unique_ptr<OptimizerParamState> make_state() const override;

 protected:
  void check_options(const OptimizerOptions& options) const override;
};

}  // namespace aotgrad::optim
