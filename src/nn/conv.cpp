// Conv1d / Conv2d, ConvTranspose2d, BatchNorm1d / BatchNorm2d and MaxPool2d.
#include "aotgrad/conv.h"

#include <cmath>
#include <ostream>
#include <stdexcept>

#include "aotgrad/nn/conv_layers.h"
#include "aotgrad/nn/init.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn {
namespace {

// One value applies to both spatial dims, as torch.nn's _pair.
IntList pair(const char* layer, const char* arg, const IntList& v) {
  if (v.size() != 1 && v.size() != 2)
    throw std::invalid_argument(std::string(layer) + ": " + arg + " must have 1 or 2 values, got " +
                                shape_to_string(v));
  return v.size() == 1 ? IntList{v[0], v[0]} : v;
}

void check_at_least(const std::string& layer, const char* arg, const IntList& v, int64_t min) {
  for (int64_t x : v)
    if (x < min)
      throw std::invalid_argument(layer + ": " + arg + " " + shape_to_string(v) +
                                  " must be >= " + std::to_string(min));
}

void check_channels(const std::string& layer, int64_t in, int64_t out, int64_t groups) {
  if (in <= 0 || out <= 0 || groups <= 0 || in % groups != 0 || out % groups != 0)
    throw std::invalid_argument(layer + ": in_channels (" + std::to_string(in) +
                                ") and out_channels (" + std::to_string(out) +
                                ") must be positive multiples of groups (" +
                                std::to_string(groups) + ")");
}

// weight ~ kaiming_uniform(a = sqrt(5)), bias ~ U(+-1/sqrt(fan_in)): _ConvNd.reset_parameters.
void init_conv(Tensor& weight, Tensor& bias) {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (!bias.defined()) return;
  double fan_in = static_cast<double>(init::calculate_fan_in_and_fan_out(weight).first);
  init::uniform_(bias, -1.0 / std::sqrt(fan_in), 1.0 / std::sqrt(fan_in));
}

std::ostream& operator<<(std::ostream& os, const IntList& v) {
  return os << shape_to_string(v);
}

bool all_equal(const IntList& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

}  // namespace

template <size_t D>
ConvNdImpl<D>::ConvNdImpl(const ConvOptions<D>& options_) : options(options_) {
  const std::string layer = type_name();
  check_channels(layer, options.in_channels(), options.out_channels(), options.groups());
  check_at_least(layer, "kernel_size", options.kernel_size(), 1);
  check_at_least(layer, "stride", options.stride(), 1);
  check_at_least(layer, "padding", options.padding(), 0);
  check_at_least(layer, "dilation", options.dilation(), 1);
  IntList shape{options.out_channels(), options.in_channels() / options.groups()};
  for (int64_t k : options.kernel_size().vec()) shape.push_back(k);
  weight = parameter(empty(shape));
  if (options.bias()) bias = parameter(empty({options.out_channels()}));
  init_conv(weight, bias);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

template <size_t D>
void ConvNdImpl<D>::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::Conv" << D << "d(" << options.in_channels() << ", "
     << options.out_channels() << ", kernel_size=" << options.kernel_size().vec()
     << ", stride=" << options.stride().vec();
  if (!all_equal(options.padding(), 0)) os << ", padding=" << options.padding().vec();
  if (!all_equal(options.dilation(), 1)) os << ", dilation=" << options.dilation().vec();
  if (options.groups() != 1) os << ", groups=" << options.groups();
  if (!options.bias()) os << ", bias=false";
  os << ")";
}

template <size_t D>
Tensor ConvNdImpl<D>::forward(const Tensor& x) {
  if constexpr (D == 2) {
    return conv2d(x, weight, bias, options.stride(), options.padding(), options.dilation(),
                  options.groups());
  } else {
    // A 1-d convolution is a 2-d one over a height-1 image: [N, C, L] -> [N, C, 1, L].
    if (x.dim() != 2 && x.dim() != 3)
      throw std::invalid_argument("Conv1d: input must be [N, C, L] or [C, L], got " +
                                  shape_to_string(x.sizes()));
    Tensor y = conv2d(x.unsqueeze(-2), weight.unsqueeze(-2), bias, {1, options.stride()[0]},
                      {0, options.padding()[0]}, {1, options.dilation()[0]}, options.groups());
    return y.squeeze(-2);
  }
}

template class ConvNdImpl<1>;
template class ConvNdImpl<2>;

Conv2dImpl::Conv2dImpl(int64_t in, int64_t out, IntList kernel, IntList stride, IntList padding,
                       IntList dilation, int64_t groups, bool with_bias)
    : ConvNdImpl<2>(ConvOptions<2>(in, out, pair("Conv2d", "kernel_size", kernel))
                        .stride(pair("Conv2d", "stride", stride))
                        .padding(pair("Conv2d", "padding", padding))
                        .dilation(pair("Conv2d", "dilation", dilation))
                        .groups(groups)
                        .bias(with_bias)) {}

ConvTranspose2dImpl::ConvTranspose2dImpl(const ConvTranspose2dOptions& options_)
    : options(options_) {
  const std::string layer = "ConvTranspose2d";
  check_channels(layer, options.in_channels(), options.out_channels(), options.groups());
  check_at_least(layer, "kernel_size", options.kernel_size(), 1);
  check_at_least(layer, "stride", options.stride(), 1);
  check_at_least(layer, "padding", options.padding(), 0);
  check_at_least(layer, "output_padding", options.output_padding(), 0);
  check_at_least(layer, "dilation", options.dilation(), 1);
  for (size_t i = 0; i < 2; ++i)
    if (options.output_padding()[i] >= std::max(options.stride()[i], options.dilation()[i]))
      throw std::invalid_argument("ConvTranspose2d: output_padding " +
                                  shape_to_string(options.output_padding()) +
                                  " must be smaller than stride or dilation in each dim");
  weight = parameter(empty({options.in_channels(), options.out_channels() / options.groups(),
                            options.kernel_size()[0], options.kernel_size()[1]}));
  if (options.bias()) bias = parameter(empty({options.out_channels()}));
  init_conv(weight, bias);
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

void ConvTranspose2dImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::ConvTranspose2d(" << options.in_channels() << ", "
     << options.out_channels() << ", kernel_size=" << options.kernel_size().vec()
     << ", stride=" << options.stride().vec();
  if (!all_equal(options.padding(), 0)) os << ", padding=" << options.padding().vec();
  if (!all_equal(options.dilation(), 1)) os << ", dilation=" << options.dilation().vec();
  if (!all_equal(options.output_padding(), 0))
    os << ", output_padding=" << options.output_padding().vec();
  if (options.groups() != 1) os << ", groups=" << options.groups();
  if (!options.bias()) os << ", bias=false";
  os << ")";
}

Tensor ConvTranspose2dImpl::forward(const Tensor& x) {
  if (x.dim() != 4 || x.size(1) != options.in_channels())
    throw std::invalid_argument("ConvTranspose2d(" + std::to_string(options.in_channels()) + ", " +
                                std::to_string(options.out_channels()) + "): input must be [N, " +
                                std::to_string(options.in_channels()) + ", H, W], got " +
                                shape_to_string(x.sizes()));
  return convolution(x, weight, bias, options.stride(), options.padding(), options.dilation(),
                     /*transposed=*/true, options.output_padding(), options.groups());
}

template <size_t D>
BatchNormNdImpl<D>::BatchNormNdImpl(const BatchNormOptions& options_) : options(options_) {
  const int64_t features = options.num_features();
  if (features <= 0)
    throw std::invalid_argument(type_name() + ": num_features must be positive, got " +
                                std::to_string(features));
  if (options.affine()) {
    weight = parameter(ones({features}));
    bias = parameter(zeros({features}));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
  if (options.track_running_stats()) {
    running_mean = zeros({features});
    running_var = ones({features});
    num_batches_tracked = zeros({}, DType::i64);
  }
  register_buffer("running_mean", running_mean);
  register_buffer("running_var", running_var);
  register_buffer("num_batches_tracked", num_batches_tracked);
}

template <size_t D>
void BatchNormNdImpl<D>::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::BatchNorm" << D << "d(" << options.num_features()
     << ", eps=" << options.eps() << ", momentum=";
  if (options.momentum())
    os << *options.momentum();
  else
    os << "None";
  os << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats()
     << ")";
}

template <size_t D>
Tensor BatchNormNdImpl<D>::forward(const Tensor& x) {
  const int64_t c = options.num_features();
  bool rank_ok = D == 1 ? (x.dim() == 2 || x.dim() == 3) : x.dim() == 4;
  if (!rank_ok || x.size(1) != c)
    throw std::invalid_argument(
        type_name() + "(" + std::to_string(c) + "): input must be " +
        (D == 1 ? "[N, " + std::to_string(c) + "] or [N, " + std::to_string(c) + ", L]"
                : "[N, " + std::to_string(c) + ", H, W]") +
        ", got " + shape_to_string(x.sizes()));
  // As torch: batch statistics in training, and always when no running statistics are kept.
  bool use_batch_stats = is_training() || !running_mean.defined();
  double momentum = options.momentum().value_or(0.0);
  if (is_training() && num_batches_tracked.defined()) {
    num_batches_tracked.add_(1);
    // momentum = None: the running statistics are the cumulative average of all batches.
    if (!options.momentum())
      momentum = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>());
  }
  return batch_norm(x, weight, bias, running_mean, running_var, use_batch_stats, momentum,
                    options.eps());
}

template class BatchNormNdImpl<1>;
template class BatchNormNdImpl<2>;

MaxPool2dImpl::MaxPool2dImpl(IntList kernel, IntList stride, IntList padding, IntList dilation,
                             bool ceil)
    : options(MaxPool2dOptions(pair("MaxPool2d", "kernel_size", kernel))
                  .padding(pair("MaxPool2d", "padding", padding))
                  .dilation(pair("MaxPool2d", "dilation", dilation))
                  .ceil_mode(ceil)) {
  if (!stride.empty()) options.stride(pair("MaxPool2d", "stride", stride));
  check_at_least("MaxPool2d", "kernel_size", options.kernel_size(), 1);
  check_at_least("MaxPool2d", "stride", options.stride(), 1);
  check_at_least("MaxPool2d", "padding", options.padding(), 0);
  check_at_least("MaxPool2d", "dilation", options.dilation(), 1);
}

void MaxPool2dImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::MaxPool2d(kernel_size=" << options.kernel_size().vec()
     << ", stride=" << options.stride().vec() << ", padding=" << options.padding().vec()
     << ", dilation=" << options.dilation().vec() << ", ceil_mode=" << options.ceil_mode() << ")";
}

Tensor MaxPool2dImpl::forward(const Tensor& x) {
  return max_pool2d(x, options.kernel_size(), options.stride(), options.padding(),
                    options.dilation(), options.ceil_mode());
}

}  // namespace aotgrad::nn
