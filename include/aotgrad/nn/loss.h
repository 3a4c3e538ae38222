// The loss modules of LibTorch: forward(input, target) with the options' reduction (kMean by
// default), computed by the loss ops of ops.h and nn_ops.h.
//
//   nn::MSELoss mse;                                   // mean of (input - target)^2
//   nn::CrossEntropyLoss ce(nn::CrossEntropyLossOptions().reduction(kSum));
//   Tensor loss = ce(logits, labels);
#pragma once

#include <ostream>
#include <string>

#include "aotgrad/nn/module.h"
#include "aotgrad/nn/options.h"

namespace aotgrad::nn {

// One loss module: its options, a printed name and forward(input, target); a loss needs a
// target, so it has no one-tensor forward.
#define AOTGRAD_LOSS_MODULE(Name)                                                          \
  class Name##Impl : public Module {                                                       \
   public:                                                                                 \
    explicit Name##Impl(const Name##Options& options = {}) : options(options) {}           \
    std::string type_name() const override { return #Name; }                               \
    void pretty_print(std::ostream& os) const override { os << "torch::nn::" #Name "()"; } \
    Tensor forward(const Tensor& input, const Tensor& target);                             \
    Name##Options options;                                                                 \
  };                                                                                       \
  TORCH_MODULE(Name)

// mean / sum / none of (input - target)^2.
AOTGRAD_LOSS_MODULE(MSELoss);
// Of |input - target|.
AOTGRAD_LOSS_MODULE(L1Loss);
// Of -input[i, target[i]] over log-probabilities [N, C] and class indices [N].
AOTGRAD_LOSS_MODULE(NLLLoss);
// nll_loss(log_softmax(input, 1), target).
AOTGRAD_LOSS_MODULE(CrossEntropyLoss);
// Of 0.5 (x - y)^2 / beta where |x - y| < beta, else |x - y| - 0.5 beta.
AOTGRAD_LOSS_MODULE(SmoothL1Loss);
// Of -w (y log p + (1 - y) log(1 - p)), the logs clamped at -100 as PyTorch does.
AOTGRAD_LOSS_MODULE(BCELoss);
// BCELoss of sigmoid(input), computed stably, with pos_weight weighting the positive term.
AOTGRAD_LOSS_MODULE(BCEWithLogitsLoss);

#undef AOTGRAD_LOSS_MODULE

}  // namespace aotgrad::nn
