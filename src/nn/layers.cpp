// Linear, Embedding, LayerNorm, Dropout and the activation layers.
#include "aotgrad/nn/layers.h"

#include <cmath>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "aotgrad/indexing.h"
#include "aotgrad/math.h"
#include "aotgrad/nn/init.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn {
namespace {

void check_positive(const char* layer, const char* arg, int64_t v) {
  if (v <= 0)
    throw std::invalid_argument(std::string(layer) + ": " + arg + " must be positive, got " +
                                std::to_string(v));
}

}  // namespace

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  check_positive("Linear", "in_features", in);
  check_positive("Linear", "out_features", out);
  // torch.nn.Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(in), 1/sqrt(in)).
  weight = parameter(empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (with_bias) {
    bias = parameter(empty({out}));
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -bound, bound);
  }
  register_parameter("bias", bias);
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() == 0 || x.size(-1) != in_features)
    throw std::invalid_argument("Linear(" + std::to_string(in_features) + ", " +
                                std::to_string(out_features) + "): input of shape " +
                                shape_to_string(x.sizes()) +
                                " must end in in_features = " + std::to_string(in_features));
  return linear(x, weight, bias);
}

GELU::GELU(std::string approx) : approximate(std::move(approx)) {
  if (approximate != "none" && approximate != "tanh")
    throw std::invalid_argument("GELU: approximate must be \"none\" or \"tanh\", got \"" +
                                approximate + "\"");
}

Tensor GELU::forward(const Tensor& x) {
  return gelu(x, approximate);
}

Tensor ReLU::forward(const Tensor& x) {
  return relu(x);
}

Embedding::Embedding(int64_t num, int64_t dim, std::optional<int64_t> padding)
    : num_embeddings(num), embedding_dim(dim), padding_idx(padding) {
  check_positive("Embedding", "num_embeddings", num);
  check_positive("Embedding", "embedding_dim", dim);
  if (padding_idx) {
    if (*padding_idx < -num || *padding_idx >= num)
      throw std::invalid_argument("Embedding: padding_idx " + std::to_string(*padding_idx) +
                                  " must be within [-num_embeddings, num_embeddings) = [" +
                                  std::to_string(-num) + ", " + std::to_string(num) + ")");
    if (*padding_idx < 0) *padding_idx += num;
  }
  weight = parameter(empty({num, dim}));
  init::normal_(weight);
  if (padding_idx) {
    NoGradGuard no_grad;
    weight.select(0, *padding_idx).fill_(0.0);
  }
  register_parameter("weight", weight);
}

Tensor Embedding::forward(const Tensor& indices) {
  if (indices.dtype() != DType::i64)
    throw std::invalid_argument("Embedding: indices must be i64, got " +
                                std::string(dtype_name(indices.dtype())) +
                                "; convert them with .to(DType::i64)");
  return embedding(weight, indices, padding_idx.value_or(-1));
}

LayerNorm::LayerNorm(IntList shape, double eps_, bool elementwise_affine)
    : normalized_shape(std::move(shape)), eps(eps_) {
  if (normalized_shape.empty())
    throw std::invalid_argument(
        "LayerNorm: normalized_shape is empty; give the trailing dims to normalise over");
  for (int64_t s : normalized_shape) check_positive("LayerNorm", "normalized_shape entry", s);
  if (elementwise_affine) {
    weight = parameter(ones(normalized_shape));
    bias = parameter(zeros(normalized_shape));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

Tensor LayerNorm::forward(const Tensor& x) {
  return layer_norm(x, normalized_shape, weight, bias, eps);
}

Dropout::Dropout(double p_) : p(p_) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument("Dropout: probability p must be in [0, 1], got " +
                                std::to_string(p));
}

Tensor Dropout::forward(const Tensor& x) {
  return dropout(x, p, is_training());
}

}  // namespace aotgrad::nn
