// Parameter initialisation (torch.nn.init). Each function overwrites `t` in place without
// recording autograd history and draws from `gen` (the thread's default generator when null, so
// manual_seed() makes a model's initial weights reproducible).
#pragma once

#include <string>
#include <utility>

#include "aotgrad/random.h"
#include "aotgrad/tensor.h"

namespace aotgrad::nn::init {

// (fan_in, fan_out) of a weight [out, in, *kernel]: in * prod(kernel), out * prod(kernel).
std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t);
// torch.nn.init.calculate_gain for "linear", "conv2d", "sigmoid", "tanh", "relu", "leaky_relu".
double calculate_gain(const std::string& nonlinearity, double param = 0.01);

void uniform_(Tensor& t, double low = 0.0, double high = 1.0, Generator* gen = nullptr);
void normal_(Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
void constant_(Tensor& t, double value);
void zeros_(Tensor& t);
void ones_(Tensor& t);
// U(-bound, bound) with bound = gain(nonlinearity, a) * sqrt(3 / fan), fan = fan_in or fan_out.
void kaiming_uniform_(Tensor& t, double a = 0.0, const std::string& mode = "fan_in",
                      const std::string& nonlinearity = "leaky_relu", Generator* gen = nullptr);

}  // namespace aotgrad::nn::init
