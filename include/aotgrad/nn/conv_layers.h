// The convolution, batch normalisation and pooling layers (LibTorch's XImpl + holder X +
// XOptions, see layers.h), with PyTorch's default initialisations.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "aotgrad/nn/module.h"
#include "aotgrad/nn/options.h"

namespace aotgrad::nn {

// Convolution over [N, C, L] (D = 1) or [N, C, H, W] (D = 2); unbatched inputs are accepted as
// by PyTorch. weight [out, in / groups, *kernel] ~ kaiming_uniform(a = sqrt(5));
// bias ~ U(+-1/sqrt(fan_in)).
template <size_t D>
class ConvNdImpl : public Module {
 public:
  explicit ConvNdImpl(const ConvOptions<D>& options);
  std::string type_name() const override { return "Conv" + std::to_string(D) + "d"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  ConvOptions<D> options;
  Tensor weight, bias;
};

class Conv1dImpl : public ConvNdImpl<1> {
 public:
  using ConvNdImpl<1>::ConvNdImpl;
  Conv1dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<1> kernel_size)
      : ConvNdImpl<1>(ConvOptions<1>(in_channels, out_channels, kernel_size)) {}
};
TORCH_MODULE(Conv1d);

class Conv2dImpl : public ConvNdImpl<2> {
 public:
  using ConvNdImpl<2>::ConvNdImpl;
  // The positional form of torch.nn.Conv2d (sizes given as one value apply to both dims).
  Conv2dImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size)
      : ConvNdImpl<2>(ConvOptions<2>(in_channels, out_channels, kernel_size)) {}
  Conv2dImpl(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = {1},
             IntList padding = {0}, IntList dilation = {1}, int64_t groups = 1, bool bias = true);
};
TORCH_MODULE(Conv2d);

// Transposed convolution over [N, C, H, W] (the gradient of Conv2d with respect to its input):
// weight [in, out / groups, kh, kw], initialised as Conv2d's with fan_in = weight.size(1) * k.
class ConvTranspose2dImpl : public Module {
 public:
  explicit ConvTranspose2dImpl(const ConvTranspose2dOptions& options);
  ConvTranspose2dImpl(int64_t in_channels, int64_t out_channels, ExpandingArray<2> kernel_size)
      : ConvTranspose2dImpl(ConvTranspose2dOptions(in_channels, out_channels, kernel_size)) {}
  std::string type_name() const override { return "ConvTranspose2d"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  ConvTranspose2dOptions options;
  Tensor weight, bias;
};
TORCH_MODULE(ConvTranspose2d);

// Batch normalisation per channel (dim 1). In training mode it normalises with the batch
// statistics and updates the buffers running_mean / running_var (unbiased variance) with
// momentum (a cumulative average when momentum is nullopt), and counts num_batches_tracked; in
// eval mode it uses the running statistics. D = 1: [N, C] or [N, C, L]; D = 2: [N, C, H, W].
template <size_t D>
class BatchNormNdImpl : public Module {
 public:
  explicit BatchNormNdImpl(const BatchNormOptions& options);
  std::string type_name() const override { return "BatchNorm" + std::to_string(D) + "d"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  BatchNormOptions options;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;
};

class BatchNorm1dImpl : public BatchNormNdImpl<1> {
 public:
  using BatchNormNdImpl<1>::BatchNormNdImpl;
};
TORCH_MODULE(BatchNorm1d);

class BatchNorm2dImpl : public BatchNormNdImpl<2> {
 public:
  using BatchNormNdImpl<2>::BatchNormNdImpl;
  BatchNorm2dImpl(int64_t num_features, double eps, double momentum = 0.1, bool affine = true,
                  bool track_running_stats = true)
      : BatchNormNdImpl<2>(BatchNormOptions(num_features)
                               .eps(eps)
                               .momentum(momentum)
                               .affine(affine)
                               .track_running_stats(track_running_stats)) {}
};
TORCH_MODULE(BatchNorm2d);

// Max over windows of [N, C, H, W]; stride defaults to kernel_size.
class MaxPool2dImpl : public Module {
 public:
  explicit MaxPool2dImpl(const MaxPool2dOptions& options) : options(options) {}
  explicit MaxPool2dImpl(ExpandingArray<2> kernel_size)
      : MaxPool2dImpl(MaxPool2dOptions(std::move(kernel_size))) {}
  // The positional form of torch.nn.MaxPool2d; an empty stride is kernel_size.
  explicit MaxPool2dImpl(IntList kernel_size, IntList stride = {}, IntList padding = {0},
                         IntList dilation = {1}, bool ceil_mode = false);
  std::string type_name() const override { return "MaxPool2d"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  MaxPool2dOptions options;
};
TORCH_MODULE(MaxPool2d);

extern template class ConvNdImpl<1>;
extern template class ConvNdImpl<2>;
extern template class BatchNormNdImpl<1>;
extern template class BatchNormNdImpl<2>;

}  // namespace aotgrad::nn
