// SGD, Adam, AdamW, RMSprop and Adagrad. Each update is written as the sequence of tensor ops
// torch/optim/*.py (1.13, _single_tensor_*) performs, so results agree to the last bit where the
// kernels do: ATen's addcmul / addcdiv compute `self + ((value * t1) op t2)`, which addcmul_ and
// addcdiv_ below spell out.
#include "aotgrad/optim/optimizers.h"

#include <cmath>
#include <stdexcept>
#include <variant>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"

namespace aotgrad::optim {
namespace {

constexpr double kInf = INFINITY;

void check_range(const std::string& opt, const char* name, double v, double lo, double hi,
                 bool hi_open) {
  if (!(v >= lo) || (hi_open ? !(v < hi) : !(v <= hi)))
    throw std::invalid_argument(opt + ": invalid " + name + " " + std::to_string(v) +
                                "; expected a value in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + (hi_open ? ")" : "]"));
}

template <typename O>
const O& options_as(const OptimizerOptions& options, const std::string& opt) {
  const O* o = dynamic_cast<const O*>(&options);
  if (!o)
    throw std::invalid_argument(opt +
                                ": a param group's options are of another optimizer's kind; "
                                "give " +
                                opt + "Options (or none, for the defaults)");
  return *o;
}

// The named option fields of an options object, for values() and set_value().
using FieldRef = std::variant<double*, bool*>;
using Fields = std::vector<std::pair<const char*, FieldRef>>;

OptionValues values_of(const Fields& fields) {
  OptionValues out;
  for (const auto& [name, ref] : fields)
    out.emplace_back(name, std::holds_alternative<double*>(ref) ? *std::get<double*>(ref)
                                                                : (*std::get<bool*>(ref) ? 1 : 0));
  return out;
}

bool set_field(const Fields& fields, std::string_view name, double value) {
  for (const auto& [field, ref] : fields) {
    if (name != field) continue;
    if (std::holds_alternative<double*>(ref)) {
      *std::get<double*>(ref) = value;
      return true;
    }
    if (value != 0 && value != 1) return false;
    *std::get<bool*>(ref) = value == 1;
    return true;
  }
  return false;
}

template <typename O>
Fields adam_fields(O& o) {
  return {{"lr", &o.lr()},
          {"betas.0", &std::get<0>(o.betas())},
          {"betas.1", &std::get<1>(o.betas())},
          {"eps", &o.eps()},
          {"weight_decay", &o.weight_decay()},
          {"amsgrad", &o.amsgrad()},
          {"maximize", &o.maximize()}};
}

Fields sgd_fields(SGDOptions& o) {
  return {{"lr", &o.lr()},
          {"momentum", &o.momentum()},
          {"dampening", &o.dampening()},
          {"weight_decay", &o.weight_decay()},
          {"nesterov", &o.nesterov()},
          {"maximize", &o.maximize()}};
}

Fields rmsprop_fields(RMSpropOptions& o) {
  return {{"lr", &o.lr()},
          {"alpha", &o.alpha()},
          {"eps", &o.eps()},
          {"weight_decay", &o.weight_decay()},
          {"momentum", &o.momentum()},
          {"centered", &o.centered()}};
}

Fields adagrad_fields(AdagradOptions& o) {
  return {{"lr", &o.lr()},
          {"lr_decay", &o.lr_decay()},
          {"weight_decay", &o.weight_decay()},
          {"initial_accumulator_value", &o.initial_accumulator_value()},
          {"eps", &o.eps()}};
}

// self += (value * t1) * t2, and self += (value * t1) / t2, in ATen's order of operations.
void addcmul_(Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  self.add_(mul(mul(t1, value), t2));
}
void addcdiv_(Tensor& self, const Tensor& t1, const Tensor& t2, double value) {
  self.add_(div(mul(t1, value), t2));
}

// Adam's update of one parameter after its gradient (weight decay and maximize applied).
void adam_update(Tensor& p, const Tensor& grad, AdamParamState& s, double lr, double beta1,
                 double beta2, double eps, bool amsgrad) {
  if (s.step() == 0) {
    s.exp_avg(zeros_like(p));
    s.exp_avg_sq(zeros_like(p));
    if (amsgrad) s.max_exp_avg_sq(zeros_like(p));
  }
  s.step(s.step() + 1);
  s.exp_avg().mul_(beta1);
  s.exp_avg().add_(grad, 1.0 - beta1);
  s.exp_avg_sq().mul_(beta2);
  addcmul_(s.exp_avg_sq(), grad, grad, 1.0 - beta2);

  double step = static_cast<double>(s.step());
  double bias_correction1 = 1.0 - std::pow(beta1, step);
  double bias_correction2 = 1.0 - std::pow(beta2, step);
  double step_size = lr / bias_correction1;
  double bias_correction2_sqrt = std::sqrt(bias_correction2);
  Tensor second = s.exp_avg_sq();
  if (amsgrad) {
    // A state restored from a run without amsgrad has no max yet: start it at zero.
    if (!s.max_exp_avg_sq().defined()) s.max_exp_avg_sq(zeros_like(p));
    s.max_exp_avg_sq().copy_(
        where(gt(s.max_exp_avg_sq(), s.exp_avg_sq()), s.max_exp_avg_sq(), s.exp_avg_sq()));
    second = s.max_exp_avg_sq();
  }
  Tensor denom = add(div(sqrt(second), bias_correction2_sqrt), eps);
  addcdiv_(p, s.exp_avg(), denom, -step_size);
}

}  // namespace

// ---- options ----

OptionValues SGDOptions::values() const {
  return values_of(sgd_fields(const_cast<SGDOptions&>(*this)));
}
bool SGDOptions::set_value(std::string_view name, double value) {
  return set_field(sgd_fields(*this), name, value);
}
OptionValues AdamOptions::values() const {
  return values_of(adam_fields(const_cast<AdamOptions&>(*this)));
}
bool AdamOptions::set_value(std::string_view name, double value) {
  return set_field(adam_fields(*this), name, value);
}
OptionValues AdamWOptions::values() const {
  return values_of(adam_fields(const_cast<AdamWOptions&>(*this)));
}
bool AdamWOptions::set_value(std::string_view name, double value) {
  return set_field(adam_fields(*this), name, value);
}
OptionValues RMSpropOptions::values() const {
  return values_of(rmsprop_fields(const_cast<RMSpropOptions&>(*this)));
}
bool RMSpropOptions::set_value(std::string_view name, double value) {
  return set_field(rmsprop_fields(*this), name, value);
}
OptionValues AdagradOptions::values() const {
  return values_of(adagrad_fields(const_cast<AdagradOptions&>(*this)));
}
bool AdagradOptions::set_value(std::string_view name, double value) {
  return set_field(adagrad_fields(*this), name, value);
}

StateSlots AdamParamState::slots() {
  return {{{"exp_avg", &exp_avg_, true},
           {"exp_avg_sq", &exp_avg_sq_, true},
           {"max_exp_avg_sq", &max_exp_avg_sq_, false}},
          {{"step", &step_}}};
}
StateSlots RMSpropParamState::slots() {
  return {{{"square_avg", &square_avg_, true},
           {"momentum_buffer", &momentum_buffer_, false},
           {"grad_avg", &grad_avg_, false}},
          {{"step", &step_}}};
}

// ---- SGD ----

SGD::SGD(std::vector<OptimizerParamGroup> groups, SGDOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<SGDOptions>(defaults)) {
  add_pending_groups();
}
SGD::SGD(std::vector<Tensor> params, SGDOptions defaults)
    : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

std::unique_ptr<OptimizerParamState> SGD::make_state() const {
  return std::make_unique<SGDParamState>();
}

void SGD::check_options(const OptimizerOptions& options) const {
  const SGDOptions& o = options_as<SGDOptions>(options, "SGD");
  check_range("SGD", "learning rate", o.lr(), 0.0, kInf, true);
  check_range("SGD", "momentum", o.momentum(), 0.0, kInf, true);
  check_range("SGD", "weight_decay", o.weight_decay(), 0.0, kInf, true);
  if (o.nesterov() && (o.momentum() <= 0 || o.dampening() != 0))
    throw std::invalid_argument(
        "SGD: nesterov momentum requires a momentum > 0 and zero dampening");
}

Tensor SGD::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups()) {
    const SGDOptions& o = static_cast<const SGDOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor d_p = p.grad();
      if (!d_p.defined()) continue;
      if (o.maximize()) d_p = neg(d_p);
      if (o.weight_decay() != 0) d_p = add(d_p, p, o.weight_decay());
      if (o.momentum() != 0) {
        SGDParamState& s = state_of<SGDParamState>(p);
        if (!s.momentum_buffer().defined()) {
          s.momentum_buffer(clone(d_p));
        } else {
          s.momentum_buffer().mul_(o.momentum());
          s.momentum_buffer().add_(d_p, 1.0 - o.dampening());
        }
        d_p = o.nesterov() ? add(d_p, s.momentum_buffer(), o.momentum()) : s.momentum_buffer();
      }
      p.add_(d_p, -o.lr());
    }
  }
  return loss;
}

// ---- Adam ----

namespace {
template <typename O>
void check_adam(const O& o, const std::string& opt) {
  check_range(opt, "learning rate", o.lr(), 0.0, kInf, true);
  check_range(opt, "epsilon value", o.eps(), 0.0, kInf, true);
  check_range(opt, "beta parameter at index 0", std::get<0>(o.betas()), 0.0, 1.0, true);
  check_range(opt, "beta parameter at index 1", std::get<1>(o.betas()), 0.0, 1.0, true);
  check_range(opt, "weight_decay value", o.weight_decay(), 0.0, kInf, true);
}
}  // namespace

Adam::Adam(std::vector<OptimizerParamGroup> groups, AdamOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<AdamOptions>(defaults)) {
  add_pending_groups();
}
Adam::Adam(std::vector<Tensor> params, AdamOptions defaults)
    : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

std::unique_ptr<OptimizerParamState> Adam::make_state() const {
  return std::make_unique<AdamParamState>();
}

void Adam::check_options(const OptimizerOptions& options) const {
  check_adam(options_as<AdamOptions>(options, "Adam"), "Adam");
}

Tensor Adam::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups()) {
    const AdamOptions& o = static_cast<const AdamOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = neg(grad);
      if (o.weight_decay() != 0) grad = add(grad, p, o.weight_decay());
      adam_update(p, grad, state_of<AdamParamState>(p), o.lr(), std::get<0>(o.betas()),
                  std::get<1>(o.betas()), o.eps(), o.amsgrad());
    }
  }
  return loss;
}

// ---- AdamW ----

AdamW::AdamW(std::vector<OptimizerParamGroup> groups, AdamWOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<AdamWOptions>(defaults)) {
  add_pending_groups();
}
AdamW::AdamW(std::vector<Tensor> params, AdamWOptions defaults)
    : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

std::unique_ptr<OptimizerParamState> AdamW::make_state() const {
  return std::make_unique<AdamWParamState>();
}

void AdamW::check_options(const OptimizerOptions& options) const {
  check_adam(options_as<AdamWOptions>(options, "AdamW"), "AdamW");
}

Tensor AdamW::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups()) {
    const AdamWOptions& o = static_cast<const AdamWOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      if (o.maximize()) grad = neg(grad);
      p.mul_(1.0 - o.lr() * o.weight_decay());
      adam_update(p, grad, state_of<AdamWParamState>(p), o.lr(), std::get<0>(o.betas()),
                  std::get<1>(o.betas()), o.eps(), o.amsgrad());
    }
  }
  return loss;
}

// ---- RMSprop ----

RMSprop::RMSprop(std::vector<OptimizerParamGroup> groups, RMSpropOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<RMSpropOptions>(defaults)) {
  add_pending_groups();
}
RMSprop::RMSprop(std::vector<Tensor> params, RMSpropOptions defaults)
    : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

std::unique_ptr<OptimizerParamState> RMSprop::make_state() const {
  return std::make_unique<RMSpropParamState>();
}

void RMSprop::check_options(const OptimizerOptions& options) const {
  const RMSpropOptions& o = options_as<RMSpropOptions>(options, "RMSprop");
  check_range("RMSprop", "learning rate", o.lr(), 0.0, kInf, true);
  check_range("RMSprop", "epsilon value", o.eps(), 0.0, kInf, true);
  check_range("RMSprop", "momentum value", o.momentum(), 0.0, kInf, true);
  check_range("RMSprop", "weight_decay value", o.weight_decay(), 0.0, kInf, true);
  check_range("RMSprop", "alpha value", o.alpha(), 0.0, kInf, true);
}

Tensor RMSprop::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups()) {
    const RMSpropOptions& o = static_cast<const RMSpropOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      RMSpropParamState& s = state_of<RMSpropParamState>(p);
      if (s.step() == 0) {
        s.square_avg(zeros_like(p));
        if (o.momentum() > 0) s.momentum_buffer(zeros_like(p));
        if (o.centered()) s.grad_avg(zeros_like(p));
      }
      s.step(s.step() + 1);
      if (o.weight_decay() != 0) grad = add(grad, p, o.weight_decay());
      s.square_avg().mul_(o.alpha());
      addcmul_(s.square_avg(), grad, grad, 1.0 - o.alpha());
      Tensor avg;
      if (o.centered()) {
        if (!s.grad_avg().defined()) s.grad_avg(zeros_like(p));
        s.grad_avg().mul_(o.alpha());
        s.grad_avg().add_(grad, 1.0 - o.alpha());
        avg = clone(s.square_avg());
        addcmul_(avg, s.grad_avg(), s.grad_avg(), -1.0);
        avg = sqrt(avg);
      } else {
        avg = sqrt(s.square_avg());
      }
      avg.add_(o.eps());
      if (o.momentum() > 0) {
        if (!s.momentum_buffer().defined()) s.momentum_buffer(zeros_like(p));
        s.momentum_buffer().mul_(o.momentum());
        addcdiv_(s.momentum_buffer(), grad, avg, 1.0);
        p.add_(s.momentum_buffer(), -o.lr());
      } else {
        addcdiv_(p, grad, avg, -o.lr());
      }
    }
  }
  return loss;
}

// ---- Adagrad ----

Adagrad::Adagrad(std::vector<OptimizerParamGroup> groups, AdagradOptions defaults)
    : Optimizer(std::move(groups), std::make_unique<AdagradOptions>(defaults)) {
  add_pending_groups();
}
Adagrad::Adagrad(std::vector<Tensor> params, AdagradOptions defaults)
    : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}

std::unique_ptr<OptimizerParamState> Adagrad::make_state() const {
  return std::make_unique<AdagradParamState>();
}

void Adagrad::check_options(const OptimizerOptions& options) const {
  const AdagradOptions& o = options_as<AdagradOptions>(options, "Adagrad");
  check_range("Adagrad", "learning rate", o.lr(), 0.0, kInf, true);
  check_range("Adagrad", "lr_decay value", o.lr_decay(), 0.0, kInf, true);
  check_range("Adagrad", "weight_decay value", o.weight_decay(), 0.0, kInf, true);
  check_range("Adagrad", "initial_accumulator_value", o.initial_accumulator_value(), 0.0, kInf,
              true);
  check_range("Adagrad", "epsilon value", o.eps(), 0.0, kInf, true);
}

Tensor Adagrad::step(LossClosure closure) {
  Tensor loss = run_closure(closure);
  NoGradGuard no_grad;
  for (OptimizerParamGroup& group : param_groups()) {
    const AdagradOptions& o = static_cast<const AdagradOptions&>(group.options());
    for (Tensor& p : group.params()) {
      Tensor grad = p.grad();
      if (!grad.defined()) continue;
      AdagradParamState& s = state_of<AdagradParamState>(p);
      if (!s.sum().defined()) s.sum(full_like(p, o.initial_accumulator_value()));
      s.step(s.step() + 1);
      if (o.weight_decay() != 0) grad = add(grad, p, o.weight_decay());
      double clr = o.lr() / (1.0 + static_cast<double>(s.step() - 1) * o.lr_decay());
      addcmul_(s.sum(), grad, grad, 1.0);
      Tensor std = sqrt(s.sum());
      std.add_(o.eps());
      addcdiv_(p, grad, std, -clr);
    }
  }
  return loss;
}

}  // namespace aotgrad::optim
