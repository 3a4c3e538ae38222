// torch.nn.init on top of the public rand/randn factories: draw a fresh tensor, scale and shift
// it, then copy it into the parameter under NoGradGuard so no history is recorded.
#include "aotgrad/nn/init.h"

#include <cmath>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn::init {
namespace {

void check_floating(const Tensor& t, const char* fn) {
  if (!t.defined()) throw std::invalid_argument(std::string(fn) + ": the tensor is undefined");
  if (!is_floating(t.dtype()))
    throw std::invalid_argument(std::string(fn) + ": needs a floating tensor, got " +
                                std::string(dtype_name(t.dtype())));
}

}  // namespace

std::pair<int64_t, int64_t> calculate_fan_in_and_fan_out(const Tensor& t) {
  if (t.dim() < 2)
    throw std::invalid_argument(
        "calculate_fan_in_and_fan_out: needs a tensor of at least 2 dims "
        "[out, in, *kernel], got shape " +
        shape_to_string(t.sizes()));
  int64_t receptive = 1;
  for (int64_t d = 2; d < t.dim(); ++d) receptive *= t.size(d);
  return {t.size(1) * receptive, t.size(0) * receptive};
}

double calculate_gain(const std::string& nonlinearity, double param) {
  if (nonlinearity == "linear" || nonlinearity == "conv1d" || nonlinearity == "conv2d" ||
      nonlinearity == "conv3d" || nonlinearity == "sigmoid")
    return 1.0;
  if (nonlinearity == "tanh") return 5.0 / 3.0;
  if (nonlinearity == "relu") return std::sqrt(2.0);
  if (nonlinearity == "leaky_relu") return std::sqrt(2.0 / (1.0 + param * param));
  if (nonlinearity == "selu") return 3.0 / 4.0;
  throw std::invalid_argument("calculate_gain: unsupported nonlinearity '" + nonlinearity +
                              "'; use linear, conv2d, sigmoid, tanh, relu, leaky_relu or selu");
}

void uniform_(Tensor& t, double low, double high, Generator* gen) {
  check_floating(t, "init::uniform_");
  NoGradGuard no_grad;
  Tensor r = rand(t.sizes(), t.dtype(), gen);
  t.copy_(r * (high - low) + low);
}

void normal_(Tensor& t, double mean, double std, Generator* gen) {
  check_floating(t, "init::normal_");
  NoGradGuard no_grad;
  Tensor r = randn(t.sizes(), t.dtype(), gen);
  t.copy_(r * std + mean);
}

void constant_(Tensor& t, double value) {
  if (!t.defined()) throw std::invalid_argument("init::constant_: the tensor is undefined");
  NoGradGuard no_grad;
  t.fill_(value);
}

void zeros_(Tensor& t) {
  constant_(t, 0.0);
}
void ones_(Tensor& t) {
  constant_(t, 1.0);
}

void kaiming_uniform_(Tensor& t, double a, const std::string& mode, const std::string& nonlinearity,
                      Generator* gen) {
  check_floating(t, "init::kaiming_uniform_");
  auto [fan_in, fan_out] = calculate_fan_in_and_fan_out(t);
  if (mode != "fan_in" && mode != "fan_out")
    throw std::invalid_argument("init::kaiming_uniform_: mode '" + mode +
                                "' must be fan_in or fan_out");
  int64_t fan = mode == "fan_in" ? fan_in : fan_out;
  if (fan == 0) return;  // torch warns and leaves a zero-element tensor alone
  double bound = calculate_gain(nonlinearity, a) * std::sqrt(3.0 / static_cast<double>(fan));
  uniform_(t, -bound, bound, gen);
}

}  // namespace aotgrad::nn::init
