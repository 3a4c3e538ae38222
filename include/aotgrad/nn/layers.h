// The layers of torch.nn that the reference models use, with PyTorch's default initialisations
// (drawn from the thread's default generator: call manual_seed() first for reproducible weights).
// Parameter and submodule names follow PyTorch where it has the layer ("weight", "bias",
// "running_mean", ...) and timm / nanoGPT where it does not ("qkv", "proj", "fc1", "fc2").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "aotgrad/nn/module.h"

namespace aotgrad::nn {

// y = x W^T + b. weight [out, in] ~ kaiming_uniform(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in));
// bias ~ U(-1/sqrt(in), 1/sqrt(in)).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  std::string type_name() const override { return "Linear"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  int64_t in_features, out_features;
};

// Rows of `weight` [num_embeddings, embedding_dim] ~ N(0, 1) picked by integer indices. The row
// padding_idx (if given) starts at zero and gets no gradient.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim,
            std::optional<int64_t> padding_idx = std::nullopt);
  std::string type_name() const override { return "Embedding"; }
  Tensor forward(const Tensor& indices) override;
  Tensor weight;
  int64_t num_embeddings, embedding_dim;
  std::optional<int64_t> padding_idx;
};

// Normalises over the trailing dims `normalized_shape`; weight = ones, bias = zeros.
class LayerNorm : public Module {
 public:
  explicit LayerNorm(IntList normalized_shape, double eps = 1e-5, bool elementwise_affine = true);
  std::string type_name() const override { return "LayerNorm"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  IntList normalized_shape;
  double eps;
};

// Zeroes each element with probability p in training mode and scales the rest by 1 / (1 - p);
// the identity in eval mode or when p == 0.
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  std::string type_name() const override { return "Dropout"; }
  Tensor forward(const Tensor& x) override;
  double p;
};

// approximate: "none" (erf) or "tanh".
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  std::string type_name() const override { return "GELU"; }
  Tensor forward(const Tensor& x) override;
  std::string approximate;
};

class ReLU : public Module {
 public:
  std::string type_name() const override { return "ReLU"; }
  Tensor forward(const Tensor& x) override;
};

// Multi-head causal self-attention on [batch, seq, d_model]: qkv = Linear(d, 3d); per head
// softmax(q k^T / sqrt(d_head), masked causally) v; proj = Linear(d, d). The causal mask is the
// bool buffer "mask" [block_size, block_size], true above the diagonal (the future positions
// masked_fill sets to -inf), so seq <= block_size.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t d_model, int64_t n_heads, int64_t block_size, double dropout = 0.0,
                      bool bias = true);
  std::string type_name() const override { return "CausalSelfAttention"; }
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Linear> qkv, proj;
  std::shared_ptr<Dropout> attn_dropout, resid_dropout;
  Tensor mask;
  int64_t d_model, n_heads, block_size;
};

// fc1 = Linear(d, hidden) -> GELU -> fc2 = Linear(hidden, d) -> Dropout.
class MLP : public Module {
 public:
  MLP(int64_t d_model, int64_t hidden, double dropout = 0.0,
      const std::string& approximate = "none");
  std::string type_name() const override { return "MLP"; }
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<Linear> fc1, fc2;
  std::shared_ptr<GELU> act;
  std::shared_ptr<Dropout> dropout;
};

// Pre-LN transformer block: x + attn(ln1(x)), then + mlp(ln2(x)).
class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t d_model, int64_t n_heads, int64_t block_size, int64_t mlp_hidden,
                   double dropout = 0.0);
  std::string type_name() const override { return "TransformerBlock"; }
  Tensor forward(const Tensor& x) override;
  std::shared_ptr<LayerNorm> ln1, ln2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
};

// 2-D convolution on [N, C, H, W]. Sizes given as one value apply to both spatial dims.
// weight [out, in / groups, kh, kw] ~ kaiming_uniform(a = sqrt(5)); bias ~ U(+-1/sqrt(fan_in)).
class Conv2d : public Module {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, IntList kernel_size, IntList stride = {1},
         IntList padding = {0}, IntList dilation = {1}, int64_t groups = 1, bool bias = true);
  std::string type_name() const override { return "Conv2d"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  int64_t in_channels, out_channels, groups;
  IntList kernel_size, stride, padding, dilation;
};

// Batch normalisation over [N, C, H, W] per channel. In training mode it normalises with the
// batch statistics and updates the buffers running_mean / running_var (unbiased variance) with
// `momentum`, and counts num_batches_tracked; in eval mode it uses the running statistics.
class BatchNorm2d : public Module {
 public:
  explicit BatchNorm2d(int64_t num_features, double eps = 1e-5, double momentum = 0.1,
                       bool affine = true, bool track_running_stats = true);
  std::string type_name() const override { return "BatchNorm2d"; }
  Tensor forward(const Tensor& x) override;
  Tensor weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;
  int64_t num_features;
  double eps, momentum;
};

// Max over windows of [N, C, H, W]; stride defaults to kernel_size.
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(IntList kernel_size, IntList stride = {}, IntList padding = {0},
                     IntList dilation = {1}, bool ceil_mode = false);
  std::string type_name() const override { return "MaxPool2d"; }
  Tensor forward(const Tensor& x) override;
  IntList kernel_size, stride, padding, dilation;
  bool ceil_mode;
};

}  // namespace aotgrad::nn
