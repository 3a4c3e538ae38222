// SGD and AdamW. Each update is written as the sequence of tensor ops torch/optim/{sgd,adamw}.py
// (1.13, _single_tensor_*) performs, so results agree to the last bit where the kernels do:
// ATen's addcmul / addcdiv compute `self + ((value * t1) op t2)`, which is spelled out below.
#include "aotgrad/nn/optim.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"

namespace aotgrad::optim {
namespace {

void check_range(const char* opt, const char* name, double v, double lo, double hi, bool hi_open) {
  if (!(v >= lo) || (hi_open ? !(v < hi) : !(v <= hi)))
    throw std::invalid_argument(std::string(opt) + ": invalid " + name + " " + std::to_string(v) +
                                "; expected a value in [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + (hi_open ? ")" : "]"));
}

constexpr double kInf = INFINITY;

}  // namespace

Optimizer::Optimizer(std::vector<Tensor> params, const char* name) : params_(std::move(params)) {
  if (params_.empty())
    throw std::invalid_argument(std::string(name) +
                                ": got an empty parameter list; pass model->parameters()");
  for (size_t i = 0; i < params_.size(); ++i) {
    const Tensor& p = params_[i];
    if (!p.defined() || !p.is_leaf() || !p.requires_grad() || !is_floating(p.dtype()))
      throw std::invalid_argument(std::string(name) + ": parameter " + std::to_string(i) +
                                  " must be a floating leaf tensor that requires grad; "
                                  "make it with nn::parameter()");
    for (size_t j = 0; j < i; ++j)
      if (params_[j].is_same(p))
        throw std::invalid_argument(std::string(name) + ": parameter " + std::to_string(i) +
                                    " is the same tensor as parameter " + std::to_string(j) +
                                    "; pass each parameter once");
  }
}

void Optimizer::zero_grad(bool set_to_none) {
  NoGradGuard no_grad;
  for (const Tensor& p : params_) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    if (set_to_none)
      p.set_grad(Tensor());
    else
      g.zero_();
  }
}

// ---- SGD ----

SGD::SGD(std::vector<Tensor> params, double lr_, SGDOptions opts)
    : Optimizer(std::move(params), "SGD"),
      lr(lr_),
      options(opts),
      momentum_buffers(params_.size()) {
  check_range("SGD", "learning rate", lr, 0.0, kInf, true);
  check_range("SGD", "momentum", options.momentum, 0.0, kInf, true);
  check_range("SGD", "weight_decay", options.weight_decay, 0.0, kInf, true);
  if (options.nesterov && (options.momentum <= 0 || options.dampening != 0))
    throw std::invalid_argument(
        "SGD: nesterov momentum requires a momentum > 0 and zero dampening");
}

void SGD::step() {
  NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor d_p = p.grad();
    if (!d_p.defined()) continue;
    if (options.maximize) d_p = neg(d_p);
    if (options.weight_decay != 0) d_p = add(d_p, p, options.weight_decay);
    if (options.momentum != 0) {
      Tensor& buf = momentum_buffers[i];
      if (!buf.defined()) {
        buf = clone(d_p);
      } else {
        buf.mul_(options.momentum);
        buf.add_(d_p, 1.0 - options.dampening);
      }
      d_p = options.nesterov ? add(d_p, buf, options.momentum) : buf;
    }
    p.add_(d_p, -lr);
  }
}

// ---- AdamW ----

AdamW::AdamW(std::vector<Tensor> params, AdamWOptions opts)
    : Optimizer(std::move(params), "AdamW"), options(opts), state(params_.size()) {
  check_range("AdamW", "learning rate", options.lr, 0.0, kInf, true);
  check_range("AdamW", "epsilon value", options.eps, 0.0, kInf, true);
  check_range("AdamW", "beta1", options.beta1, 0.0, 1.0, true);
  check_range("AdamW", "beta2", options.beta2, 0.0, 1.0, true);
  check_range("AdamW", "weight_decay value", options.weight_decay, 0.0, kInf, true);
}

void AdamW::step() {
  NoGradGuard no_grad;
  const AdamWOptions& o = options;
  for (size_t i = 0; i < params_.size(); ++i) {
    Tensor& p = params_[i];
    Tensor grad = p.grad();
    if (!grad.defined()) continue;
    if (o.maximize) grad = neg(grad);
    State& s = state[i];
    if (s.step == 0) {
      s.exp_avg = zeros_like(p);
      s.exp_avg_sq = zeros_like(p);
      if (o.amsgrad) s.max_exp_avg_sq = zeros_like(p);
    }
    ++s.step;
    p.mul_(1.0 - o.lr * o.weight_decay);
    s.exp_avg.mul_(o.beta1);
    s.exp_avg.add_(grad, 1.0 - o.beta1);
    s.exp_avg_sq.mul_(o.beta2);
    s.exp_avg_sq.add_(mul(mul(grad, 1.0 - o.beta2), grad));  // addcmul_(grad, grad, 1 - beta2)

    double step = static_cast<double>(s.step);
    double bias_correction1 = 1.0 - std::pow(o.beta1, step);
    double bias_correction2 = 1.0 - std::pow(o.beta2, step);
    double step_size = o.lr / bias_correction1;
    double bias_correction2_sqrt = std::sqrt(bias_correction2);
    Tensor second = s.exp_avg_sq;
    if (o.amsgrad) {
      s.max_exp_avg_sq.copy_(
          where(gt(s.max_exp_avg_sq, s.exp_avg_sq), s.max_exp_avg_sq, s.exp_avg_sq));
      second = s.max_exp_avg_sq;
    }
    Tensor denom = add(div(sqrt(second), bias_correction2_sqrt), o.eps);
    p.add_(div(mul(s.exp_avg, -step_size), denom));  // addcdiv_(exp_avg, denom, -step_size)
  }
}

}  // namespace aotgrad::optim
