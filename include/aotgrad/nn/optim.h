// Optimizers (torch.optim): SGD and AdamW, with the same update formulas, in the same order of
// floating-point operations, as PyTorch 1.13's single-tensor (non-foreach) implementations.
//
//   optim::AdamW opt(model->parameters(), {.lr = 1e-3});
//   opt.zero_grad(); loss.backward(); opt.step();
//
// step() updates each parameter in place under NoGradGuard (its version counter moves, so a
// graph that saved it before the step refuses to run backward) and skips parameters whose
// .grad() is undefined, as torch does. State (momentum buffers, moments) is created on a
// parameter's first step, with the parameter's dtype.
#pragma once

#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::optim {

class Optimizer {
 public:
  Optimizer(std::vector<Tensor> params, const char* name);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  virtual void step() = 0;
  void zero_grad(bool set_to_none = true);
  const std::vector<Tensor>& params() const { return params_; }

 protected:
  std::vector<Tensor> params_;
};

struct SGDOptions {
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
  bool maximize = false;
};

// d = g + weight_decay * p; with momentum: buf = d on the first step, else
// buf = momentum * buf + (1 - dampening) * d; d = nesterov ? d + momentum * buf : buf;
// p -= lr * d.
class SGD : public Optimizer {
 public:
  SGD(std::vector<Tensor> params, double lr, SGDOptions options = {});
  void step() override;
  double lr;
  SGDOptions options;
  // One per parameter; undefined until that parameter's first step with momentum.
  std::vector<Tensor> momentum_buffers;
};

struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 1e-2;
  bool amsgrad = false;
  bool maximize = false;
};

// Adam with decoupled weight decay: p *= 1 - lr * weight_decay, then the Adam step on the moments
// with bias correction.
class AdamW : public Optimizer {
 public:
  explicit AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  void step() override;
  AdamWOptions options;
  struct State {
    int64_t step = 0;
    Tensor exp_avg, exp_avg_sq, max_exp_avg_sq;
  };
  std::vector<State> state;  // one per parameter
};

}  // namespace aotgrad::optim
