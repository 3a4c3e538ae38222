// nn::functional, LibTorch's F:: spellings of the functional ops, each taking its options
// struct (`namespace F = aotgrad::nn::functional;`):
//
//   F::relu(x)
//   F::dropout(x, F::DropoutFuncOptions().p(0.2).training(is_training()))
//   F::log_softmax(x, 1)                      // LogSoftmaxFuncOptions(1)
//   F::nll_loss(log_probs, labels, F::NLLLossFuncOptions().reduction(kSum))
//
// Each is a thin call of the op in ops.h / math.h / conv.h / nn_ops.h with the options' values.
#pragma once

#include <cstdint>

#include "aotgrad/conv.h"
#include "aotgrad/math.h"
#include "aotgrad/nn/options.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn::functional {

using ReLUFuncOptions = ReLUOptions;
using GELUFuncOptions = GELUOptions;
using MSELossFuncOptions = MSELossOptions;
using NLLLossFuncOptions = NLLLossOptions;
using CrossEntropyFuncOptions = CrossEntropyLossOptions;
using MaxPool2dFuncOptions = MaxPool2dOptions;

struct DropoutFuncOptions {
  AOTGRAD_ARG(double, p) = 0.5;
  AOTGRAD_ARG(bool, training) = true;
  AOTGRAD_ARG(bool, inplace) = false;
};

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT: implicit, so softmax(x, 1) works
  AOTGRAD_ARG(int64_t, dim);
};
struct LogSoftmaxFuncOptions {
  LogSoftmaxFuncOptions(int64_t dim) : dim_(dim) {}  // NOLINT: implicit
  AOTGRAD_ARG(int64_t, dim);
};

template <size_t D>
struct ConvFuncOptions {
  AOTGRAD_ARG(Tensor, bias);
  AOTGRAD_ARG(ExpandingArray<D>, stride) = 1;
  AOTGRAD_ARG(ExpandingArray<D>, padding) = 0;
  AOTGRAD_ARG(ExpandingArray<D>, dilation) = 1;
  AOTGRAD_ARG(int64_t, groups) = 1;
};
using Conv2dFuncOptions = ConvFuncOptions<2>;

inline Tensor relu(const Tensor& x, const ReLUFuncOptions& = {}) {
  return aotgrad::relu(x);
}
inline Tensor gelu(const Tensor& x, const GELUFuncOptions& options = {}) {
  return aotgrad::gelu(x, options.approximate());
}
inline Tensor dropout(const Tensor& x, const DropoutFuncOptions& options = {}) {
  return aotgrad::dropout(x, options.p(), options.training());
}
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& options) {
  return aotgrad::softmax(x, options.dim());
}
inline Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& options) {
  return aotgrad::log_softmax(x, options.dim());
}
inline Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor()) {
  return aotgrad::linear(x, weight, bias);
}
inline Tensor conv2d(const Tensor& x, const Tensor& weight, const Conv2dFuncOptions& options = {}) {
  return aotgrad::conv2d(x, weight, options.bias(), options.stride(), options.padding(),
                         options.dilation(), options.groups());
}
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& options) {
  return aotgrad::max_pool2d(x, options.kernel_size(), options.stride(), options.padding(),
                             options.dilation(), options.ceil_mode());
}

inline Tensor mse_loss(const Tensor& input, const Tensor& target,
                       const MSELossFuncOptions& options = {}) {
  return aotgrad::mse_loss(input, target, options.reduction().name());
}
inline Tensor nll_loss(const Tensor& input, const Tensor& target,
                       const NLLLossFuncOptions& options = {}) {
  return aotgrad::nll_loss(input, target, options.reduction().name(), options.weight(),
                           options.ignore_index());
}
inline Tensor cross_entropy(const Tensor& input, const Tensor& target,
                            const CrossEntropyFuncOptions& options = {}) {
  return aotgrad::cross_entropy(input, target, options.reduction().name(), options.weight(),
                                options.ignore_index());
}

}  // namespace aotgrad::nn::functional
