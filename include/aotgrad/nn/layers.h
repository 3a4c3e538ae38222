// The layers of torch.nn that the reference models use, with PyTorch's default initialisations
// (drawn from the thread's default generator: call manual_seed() first for reproducible weights).
// Parameter and submodule names follow PyTorch where it has the layer ("weight", "bias",
// "running_mean", ...) and timm / nanoGPT where it does not ("qkv", "proj", "fc1", "fc2").
//
// LibTorch's layers come as a class XImpl (the module), its holder X (holder.h) and XOptions
// (options.h): `nn::Linear fc(nn::LinearOptions(3, 4).bias(false)); fc(x); fc->weight`. Each
// XImpl keeps the options it was built with in `options`. The convolution, normalisation and
// pooling layers are in conv_layers.h, the losses in loss.h.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "aotgrad/nn/conv_layers.h"
#include "aotgrad/nn/module.h"
#include "aotgrad/nn/options.h"
#include "aotgrad/nn_ops.h"

namespace aotgrad::nn {

// y = x W^T + b. weight [out, in] ~ kaiming_uniform(a = sqrt(5)), i.e. U(-1/sqrt(in), 1/sqrt(in));
// bias ~ U(-1/sqrt(in), 1/sqrt(in)).
class LinearImpl : public Module {
 public:
  explicit LinearImpl(const LinearOptions& options);
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true)
      : LinearImpl(LinearOptions(in_features, out_features).bias(bias)) {}
  std::string type_name() const override { return "Linear"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  LinearOptions options;
  Tensor weight, bias;
};
TORCH_MODULE(Linear);

// Rows of `weight` [num_embeddings, embedding_dim] ~ N(0, 1) picked by integer indices. The row
// padding_idx (if given; negative counts from the end) starts at zero and gets no gradient.
class EmbeddingImpl : public Module {
 public:
  explicit EmbeddingImpl(const EmbeddingOptions& options);
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim,
                std::optional<int64_t> padding_idx = std::nullopt)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim).padding_idx(padding_idx)) {}
  std::string type_name() const override { return "Embedding"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& indices);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  EmbeddingOptions options;  // padding_idx made non-negative
  Tensor weight;
};
TORCH_MODULE(Embedding);

// Normalises over the trailing dims `normalized_shape`; weight = ones, bias = zeros.
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(const LayerNormOptions& options);
  explicit LayerNormImpl(IntList normalized_shape, double eps = 1e-5,
                         bool elementwise_affine = true)
      : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))
                          .eps(eps)
                          .elementwise_affine(elementwise_affine)) {}
  std::string type_name() const override { return "LayerNorm"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  LayerNormOptions options;
  Tensor weight, bias;
};
TORCH_MODULE(LayerNorm);

// Zeroes each element with probability p in training mode and scales the rest by 1 / (1 - p);
// the identity in eval mode or when p == 0. inplace is accepted and computes out of place.
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(const DropoutOptions& options = {});
  std::string type_name() const override { return "Dropout"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  DropoutOptions options;
};
TORCH_MODULE(Dropout);

// Zeroes whole channels (every element of x[n, c]) with probability p in training mode and scales
// the rest by 1 / (1 - p) (feature_dropout); the identity in eval mode. inplace computes out of
// place.
class Dropout2dImpl : public Module {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options = {}) : options(options) {}
  std::string type_name() const override { return "Dropout2d"; }
  void pretty_print(std::ostream& os) const override {
    os << "torch::nn::Dropout2d(p=" << options.p() << ", inplace=" << std::boolalpha
       << options.inplace() << ")";
  }
  Tensor forward(const Tensor& x) { return feature_dropout(x, options.p(), is_training()); }
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  Dropout2dOptions options;
};
TORCH_MODULE(Dropout2d);

// approximate: "none" (erf) or "tanh".
class GELUImpl : public Module {
 public:
  explicit GELUImpl(const GELUOptions& options = {});
  explicit GELUImpl(std::string approximate)
      : GELUImpl(GELUOptions().approximate(std::move(approximate))) {}
  std::string type_name() const override { return "GELU"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  GELUOptions options;
};
TORCH_MODULE(GELU);

class ReLUImpl : public Module {
 public:
  explicit ReLUImpl(const ReLUOptions& options = {}) : options(options) {}
  std::string type_name() const override { return "ReLU"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  ReLUOptions options;
};
TORCH_MODULE(ReLU);

// x > 0 ? x : negative_slope * x (leaky_relu); inplace computes out of place.
class LeakyReLUImpl : public Module {
 public:
  explicit LeakyReLUImpl(const LeakyReLUOptions& options = {}) : options(options) {}
  std::string type_name() const override { return "LeakyReLU"; }
  void pretty_print(std::ostream& os) const override {
    os << "torch::nn::LeakyReLU(negative_slope=" << options.negative_slope() << ")";
  }
  Tensor forward(const Tensor& x) { return leaky_relu(x, options.negative_slope()); }
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  LeakyReLUOptions options;
};
TORCH_MODULE(LeakyReLU);

class SigmoidImpl : public Module {
 public:
  std::string type_name() const override { return "Sigmoid"; }
  void pretty_print(std::ostream& os) const override { os << "torch::nn::Sigmoid()"; }
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
};
TORCH_MODULE(Sigmoid);

class TanhImpl : public Module {
 public:
  std::string type_name() const override { return "Tanh"; }
  void pretty_print(std::ostream& os) const override { os << "torch::nn::Tanh()"; }
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
};
TORCH_MODULE(Tanh);

// Merges dims start_dim..end_dim into one (a view where the strides allow, as reshape).
class FlattenImpl : public Module {
 public:
  explicit FlattenImpl(const FlattenOptions& options = {}) : options(options) {}
  std::string type_name() const override { return "Flatten"; }
  void pretty_print(std::ostream& os) const override;
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  FlattenOptions options;
};
TORCH_MODULE(Flatten);

// Wraps a function of one tensor as a module, for Sequential: Functional(relu), a lambda, or a
// function with the arguments after the tensor bound, as LibTorch's Functional(torch::leaky_relu,
// 0.2) calls leaky_relu(x, 0.2). Name an overloaded function with a cast or a lambda.
class FunctionalImpl : public Module {
 public:
  using Function = std::function<Tensor(Tensor)>;
  template <typename F, typename... Bound>
  requires std::is_invocable_v<F&, Tensor, Bound&...>
  explicit FunctionalImpl(F function, Bound... bound)
      : function_([function = std::move(function), ... bound = std::move(bound)](Tensor x) mutable {
          return Tensor(std::invoke(function, std::move(x), bound...));
        }) {}
  std::string type_name() const override { return "Functional"; }
  void pretty_print(std::ostream& os) const override { os << "torch::nn::Functional()"; }
  Tensor forward(const Tensor& x) { return function_(x); }
  Tensor call_forward(const Tensor& x) override { return forward(x); }

 private:
  Function function_;
};
TORCH_MODULE(Functional);

// Multi-head causal self-attention on [batch, seq, d_model]: qkv = Linear(d, 3d); per head
// softmax(q k^T / sqrt(d_head), masked causally) v; proj = Linear(d, d). The causal mask is the
// bool buffer "mask" [block_size, block_size], true above the diagonal (the future positions
// masked_fill sets to -inf), so seq <= block_size.
class CausalSelfAttention : public Module {
 public:
  CausalSelfAttention(int64_t d_model, int64_t n_heads, int64_t block_size, double dropout = 0.0,
                      bool bias = true);
  std::string type_name() const override { return "CausalSelfAttention"; }
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  std::shared_ptr<LinearImpl> qkv, proj;
  std::shared_ptr<DropoutImpl> attn_dropout, resid_dropout;
  Tensor mask;
  int64_t d_model, n_heads, block_size;
};

// fc1 = Linear(d, hidden) -> GELU -> fc2 = Linear(hidden, d) -> Dropout.
class MLP : public Module {
 public:
  MLP(int64_t d_model, int64_t hidden, double dropout = 0.0,
      const std::string& approximate = "none");
  std::string type_name() const override { return "MLP"; }
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  std::shared_ptr<LinearImpl> fc1, fc2;
  std::shared_ptr<GELUImpl> act;
  std::shared_ptr<DropoutImpl> dropout;
};

// Pre-LN transformer block: x + attn(ln1(x)), then + mlp(ln2(x)).
class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t d_model, int64_t n_heads, int64_t block_size, int64_t mlp_hidden,
                   double dropout = 0.0);
  std::string type_name() const override { return "TransformerBlock"; }
  Tensor forward(const Tensor& x);
  Tensor call_forward(const Tensor& x) override { return forward(x); }
  std::shared_ptr<LayerNormImpl> ln1, ln2;
  std::shared_ptr<CausalSelfAttention> attn;
  std::shared_ptr<MLP> mlp;
};

}  // namespace aotgrad::nn
