// The learning-rate schedulers of optim/schedulers.h.
#include "aotgrad/optim/schedulers.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace aotgrad::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) {
  base_lrs_ = get_current_lrs();
}

void LRScheduler::step() {
  set_optimizer_lrs(get_lrs());
  ++step_count_;
}

std::vector<double> LRScheduler::get_current_lrs() const {
  std::vector<double> lrs;
  for (const OptimizerParamGroup& group : optimizer_.param_groups())
    lrs.push_back(group.options().get_lr());
  return lrs;
}

void LRScheduler::set_optimizer_lrs(const std::vector<double>& lrs) {
  std::vector<OptimizerParamGroup>& groups = optimizer_.param_groups();
  if (lrs.size() != groups.size())
    throw std::logic_error("LRScheduler: computed " + std::to_string(lrs.size()) +
                           " learning rates for " + std::to_string(groups.size()) +
                           " param groups (a group was added after the scheduler was made)");
  for (size_t i = 0; i < groups.size(); ++i) groups[i].options().set_lr(lrs[i]);
}

StepLR::StepLR(Optimizer& optimizer, unsigned step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  if (step_size == 0) throw std::invalid_argument("StepLR: step_size must be at least 1");
}

std::vector<double> StepLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  if (step_count_ != 0 && step_count_ % step_size_ == 0)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer), gamma_(gamma) {}

std::vector<double> ExponentialLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {}

std::vector<double> MultiStepLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  const int64_t epoch = static_cast<int64_t>(step_count_) + 1;
  auto hits = std::count(milestones_.begin(), milestones_.end(), epoch);
  if (hits > 0)
    for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(hits));
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), t_max_(T_max), eta_min_(eta_min) {
  if (T_max < 1) throw std::invalid_argument("CosineAnnealingLR: T_max must be at least 1");
}

std::vector<double> CosineAnnealingLR::get_lrs() {
  std::vector<double> lrs = get_current_lrs();
  const int64_t epoch = static_cast<int64_t>(step_count_) + 1;
  const double t_max = static_cast<double>(t_max_);
  const int64_t period = 2 * t_max_;
  // Python's modulo (never negative) of epoch - 1 - T_max.
  const int64_t phase = (((epoch - 1 - t_max_) % period) + period) % period;
  for (size_t i = 0; i < lrs.size(); ++i) {
    if (phase == 0)
      lrs[i] += (base_lrs()[i] - eta_min_) * (1 - std::cos(std::numbers::pi / t_max)) / 2;
    else
      lrs[i] = (1 + std::cos(std::numbers::pi * static_cast<double>(epoch) / t_max)) /
                   (1 + std::cos(std::numbers::pi * static_cast<double>(epoch - 1) / t_max)) *
                   (lrs[i] - eta_min_) +
               eta_min_;
  }
  return lrs;
}

LambdaLR::LambdaLR(Optimizer& optimizer, std::function<double(unsigned)> lr_lambda)
    : LRScheduler(optimizer), lr_lambda_(std::move(lr_lambda)) {
  if (!lr_lambda_) throw std::invalid_argument("LambdaLR: lr_lambda is empty");
  // torch's constructor takes the first step: lr = base_lr * lambda(0).
  std::vector<double> lrs = base_lrs();
  for (double& lr : lrs) lr *= lr_lambda_(0);
  for (size_t i = 0; i < lrs.size(); ++i) optimizer.param_groups()[i].options().set_lr(lrs[i]);
}

std::vector<double> LambdaLR::get_lrs() {
  std::vector<double> lrs = base_lrs();
  for (double& lr : lrs) lr *= lr_lambda_(step_count_ + 1);
  return lrs;
}

}  // namespace aotgrad::optim
