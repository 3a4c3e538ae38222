// The loss modules: each forward is a loss op with the options' reduction. L1, smooth L1 and
// the two binary cross-entropies are written here as compositions of core ops (abs, where, log,
// exp, clamp), each differentiable through their own VJPs; PyTorch 1.13 records the same
// formulas.
#include "aotgrad/nn/loss.h"

#include "aotgrad/math.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn {
namespace {

Tensor reduce(const Tensor& loss, const LossReduction& reduction) {
  if (reduction.name() == "mean") return loss.mean();
  if (reduction.name() == "sum") return loss.sum();
  return loss;
}

void check_same_shape(const char* loss, const Tensor& input, const Tensor& target) {
  if (input.sizes() != target.sizes())
    throw std::invalid_argument(std::string(loss) + ": target of shape " +
                                shape_to_string(target.sizes()) + " must have the input's shape " +
                                shape_to_string(input.sizes()));
}

}  // namespace

Tensor MSELossImpl::forward(const Tensor& input, const Tensor& target) {
  return mse_loss(input, target, options.reduction().name());
}

Tensor NLLLossImpl::forward(const Tensor& input, const Tensor& target) {
  return nll_loss(input, target, options.reduction().name(), options.weight(),
                  options.ignore_index());
}

Tensor CrossEntropyLossImpl::forward(const Tensor& input, const Tensor& target) {
  return cross_entropy(input, target, options.reduction().name(), options.weight(),
                       options.ignore_index());
}

Tensor L1LossImpl::forward(const Tensor& input, const Tensor& target) {
  return reduce(abs(input - target), options.reduction());
}

Tensor SmoothL1LossImpl::forward(const Tensor& input, const Tensor& target) {
  const double beta = options.beta();
  if (beta < 0)
    throw std::invalid_argument("SmoothL1Loss: beta must be >= 0, got " + std::to_string(beta));
  Tensor d = input - target;
  Tensor ad = abs(d);
  if (beta == 0) return reduce(ad, options.reduction());
  Tensor loss = where(lt(ad, Scalar(beta)), d * d * (0.5 / beta), ad - 0.5 * beta);
  return reduce(loss, options.reduction());
}

Tensor BCELossImpl::forward(const Tensor& input, const Tensor& target) {
  check_same_shape("BCELoss", input, target);
  // PyTorch clamps each log at -100 so that p = 0 or 1 gives a finite loss.
  Tensor log_p = clamp(log(input), Scalar(-100.0), std::nullopt);
  Tensor log_1mp = clamp(log(1.0 - input), Scalar(-100.0), std::nullopt);
  Tensor loss = -(target * log_p + (1.0 - target) * log_1mp);
  if (options.weight().defined()) loss = loss * options.weight();
  return reduce(loss, options.reduction());
}

Tensor BCEWithLogitsLossImpl::forward(const Tensor& input, const Tensor& target) {
  check_same_shape("BCEWithLogitsLoss", input, target);
  // -log(sigmoid(x)) = log(1 + exp(-|x|)) + max(-x, 0), which never overflows.
  Tensor neg_log_sigmoid = log(1.0 + exp(-abs(input))) + relu(-input);
  Tensor loss;
  if (options.pos_weight().defined()) {
    Tensor log_weight = 1.0 + (options.pos_weight() - 1.0) * target;
    loss = (1.0 - target) * input + log_weight * neg_log_sigmoid;
  } else {
    loss = (1.0 - target) * input + neg_log_sigmoid;
  }
  if (options.weight().defined()) loss = loss * options.weight();
  return reduce(loss, options.reduction());
}

}  // namespace aotgrad::nn
