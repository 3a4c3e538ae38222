// Learning-rate schedulers (torch::optim::LRScheduler and friends). A scheduler holds a reference
// to its optimizer (which must outlive it) and, on each step(), sets every param group's lr
// through options().set_lr().
//
//   optim::StepLR sched(opt, /*step_size=*/30, /*gamma=*/0.1);
//   for (epoch ...) { train(...); sched.step(); }
//
// StepLR is LibTorch 1.13's: its n-th step() (counting from 0) multiplies the lr by gamma when n
// is a positive multiple of step_size, one call later than torch.optim.lr_scheduler.StepLR.
// The others (LibTorch 1.13 has none) follow torch.optim.lr_scheduler (1.13): after k calls of
// step() the lr is the Python scheduler's lr at last_epoch = k; base lrs are the groups' lrs
// when the scheduler is made. Thread-safety: as the optimizer's.
#pragma once

#include <functional>
#include <vector>

#include "aotgrad/optim/optimizer.h"

namespace aotgrad::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;

  // Sets the lrs get_lrs() computes, then counts the step.
  void step();
  // Every param group's current lr (torch's get_last_lr()).
  std::vector<double> get_last_lr() const { return get_current_lrs(); }

 protected:
  // One lr per param group, for the step being taken (step_count_ steps were taken before).
  virtual std::vector<double> get_lrs() = 0;
  std::vector<double> get_current_lrs() const;
  const std::vector<double>& base_lrs() const { return base_lrs_; }

  unsigned step_count_ = 0;

 private:
  void set_optimizer_lrs(const std::vector<double>& lrs);

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;
};

// lr *= gamma on every step_size-th step (LibTorch's counting: see above).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, unsigned step_size, double gamma = 0.1);

 private:
  std::vector<double> get_lrs() override;
  unsigned step_size_;
  double gamma_;
};

// lr *= gamma on every step.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 private:
  std::vector<double> get_lrs() override;
  double gamma_;
};

// lr *= gamma when the epoch reached (the number of step() calls) is a milestone; a milestone
// listed twice multiplies twice.
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 private:
  std::vector<double> get_lrs() override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// Cosine annealing from the base lr to eta_min over T_max epochs and back (torch's recursive
// form, so an lr changed by hand between steps is followed from where it is).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 private:
  std::vector<double> get_lrs() override;
  int64_t t_max_;
  double eta_min_;
};

// lr = base_lr * lr_lambda(epoch); applied for epoch 0 when constructed, as torch does.
class LambdaLR : public LRScheduler {
 public:
  LambdaLR(Optimizer& optimizer, std::function<double(unsigned)> lr_lambda);

 private:
  std::vector<double> get_lrs() override;
  std::function<double(unsigned)> lr_lambda_;
};

}  // namespace aotgrad::optim
