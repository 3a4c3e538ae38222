// Batch normalisation over the channel dim (1) of an [N, C, ...] tensor, forward and backward.
//
// Statistics accumulate in double (ATen's CPU accumulation type for f32 as well); f16 / bf16
// inputs compute in f32. Inputs may have any strides; results are contiguous. Shapes and dtypes
// are validated by the op layer's meta functions, which also choose `stat_dtype` (the dtype of
// save_mean / save_invstd and of the parameter gradients).
#pragma once

#include <array>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

struct BatchNormForward {
  Tensor output;                             // input's shape and dtype
  Tensor save_mean, save_invstd;             // [C] in training, [0] in eval (as ATen)
  Tensor new_running_mean, new_running_var;  // undefined unless running stats were given
};

// Training: normalises with the batch mean and biased variance; when running_mean / running_var
// are defined also returns their updated values, (1 - momentum) * running + momentum * batch
// statistic, with the unbiased variance (n / (n - 1)) for running_var. Eval: normalises with the
// running statistics and returns them unchanged as new_running_*. weight / bias may be undefined
// (1 and 0).
BatchNormForward batch_norm_forward(const Tensor& input, const Tensor& weight, const Tensor& bias,
                                    const Tensor& running_mean, const Tensor& running_var,
                                    bool training, double momentum, double eps, DType stat_dtype);

// {grad_input, grad_weight, grad_bias}; entry i is undefined unless need[i]. Training reads
// save_mean / save_invstd, eval reads running_mean / running_var (and eps).
std::array<Tensor, 3> batch_norm_backward(const Tensor& grad_output, const Tensor& input,
                                          const Tensor& weight, const Tensor& running_mean,
                                          const Tensor& running_var, const Tensor& save_mean,
                                          const Tensor& save_invstd, bool training, double eps,
                                          std::array<bool, 3> need, DType param_dtype);

}  // namespace aotgrad::kernels
