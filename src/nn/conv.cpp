// Conv2d, BatchNorm2d and MaxPool2d: the layers of a ResNet basic block.
#include "aotgrad/conv.h"

#include <cmath>
#include <stdexcept>

#include "aotgrad/nn/init.h"
#include "aotgrad/nn/layers.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn {
namespace {

// One value applies to both spatial dims, as torch.nn's _pair.
IntList pair(const char* layer, const char* arg, const IntList& v, int64_t min) {
  if (v.size() != 1 && v.size() != 2)
    throw std::invalid_argument(std::string(layer) + ": " + arg + " must have 1 or 2 values, got " +
                                shape_to_string(v));
  IntList out = v.size() == 1 ? IntList{v[0], v[0]} : v;
  for (int64_t x : out)
    if (x < min)
      throw std::invalid_argument(std::string(layer) + ": " + arg + " " + shape_to_string(v) +
                                  " must be >= " + std::to_string(min));
  return out;
}

}  // namespace

Conv2d::Conv2d(int64_t in, int64_t out, IntList kernel, IntList stride_, IntList padding_,
               IntList dilation_, int64_t groups_, bool with_bias)
    : in_channels(in),
      out_channels(out),
      groups(groups_),
      kernel_size(pair("Conv2d", "kernel_size", kernel, 1)),
      stride(pair("Conv2d", "stride", stride_, 1)),
      padding(pair("Conv2d", "padding", padding_, 0)),
      dilation(pair("Conv2d", "dilation", dilation_, 1)) {
  if (in <= 0 || out <= 0 || groups <= 0 || in % groups != 0 || out % groups != 0)
    throw std::invalid_argument("Conv2d: in_channels (" + std::to_string(in) +
                                ") and out_channels (" + std::to_string(out) +
                                ") must be positive multiples of groups (" +
                                std::to_string(groups) + ")");
  weight = parameter(empty({out, in / groups, kernel_size[0], kernel_size[1]}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (with_bias) {
    bias = parameter(empty({out}));
    double bound =
        1.0 / std::sqrt(static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first));
    init::uniform_(bias, -bound, bound);
  }
  register_parameter("bias", bias);
}

Tensor Conv2d::forward(const Tensor& x) {
  return conv2d(x, weight, bias, stride, padding, dilation, groups);
}

BatchNorm2d::BatchNorm2d(int64_t features, double eps_, double momentum_, bool affine,
                         bool track_running_stats)
    : num_features(features), eps(eps_), momentum(momentum_) {
  if (features <= 0)
    throw std::invalid_argument("BatchNorm2d: num_features must be positive, got " +
                                std::to_string(features));
  if (affine) {
    weight = parameter(ones({features}));
    bias = parameter(zeros({features}));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
  if (track_running_stats) {
    running_mean = zeros({features});
    running_var = ones({features});
    num_batches_tracked = zeros({}, DType::i64);
  }
  register_buffer("running_mean", running_mean);
  register_buffer("running_var", running_var);
  register_buffer("num_batches_tracked", num_batches_tracked);
}

Tensor BatchNorm2d::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(1) != num_features)
    throw std::invalid_argument("BatchNorm2d(" + std::to_string(num_features) +
                                "): input must be [N, " + std::to_string(num_features) +
                                ", H, W], got " + shape_to_string(x.sizes()));
  // As torch: batch statistics in training, and always when no running statistics are kept.
  bool use_batch_stats = is_training() || !running_mean.defined();
  if (is_training() && num_batches_tracked.defined()) num_batches_tracked.add_(1);
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch_stats, momentum, eps);
}

MaxPool2d::MaxPool2d(IntList kernel, IntList stride_, IntList padding_, IntList dilation_,
                     bool ceil)
    : kernel_size(pair("MaxPool2d", "kernel_size", kernel, 1)),
      stride(stride_.empty() ? kernel_size : pair("MaxPool2d", "stride", stride_, 1)),
      padding(pair("MaxPool2d", "padding", padding_, 0)),
      dilation(pair("MaxPool2d", "dilation", dilation_, 1)),
      ceil_mode(ceil) {}

Tensor MaxPool2d::forward(const Tensor& x) {
  return max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
}

}  // namespace aotgrad::nn
