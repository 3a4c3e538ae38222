// Linear, Embedding, LayerNorm, Dropout, Flatten and the activation layers.
#include "aotgrad/nn/layers.h"

#include <algorithm>
#include <cmath>
#include <ostream>
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

void check_probability(const char* layer, double p) {
  if (!(p >= 0.0 && p <= 1.0))
    throw std::invalid_argument(std::string(layer) + ": probability p must be in [0, 1], got " +
                                std::to_string(p));
}

}  // namespace

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) {
  const int64_t in = options.in_features(), out = options.out_features();
  check_positive("Linear", "in_features", in);
  check_positive("Linear", "out_features", out);
  // torch.nn.Linear.reset_parameters: kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(in), 1/sqrt(in)).
  weight = parameter(empty({out, in}));
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  register_parameter("weight", weight);
  if (options.bias()) {
    bias = parameter(empty({out}));
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    init::uniform_(bias, -bound, bound);
  }
  register_parameter("bias", bias);
}

void LinearImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::Linear(in_features=" << options.in_features()
     << ", out_features=" << options.out_features() << ", bias=" << options.bias() << ")";
}

Tensor LinearImpl::forward(const Tensor& x) {
  const int64_t in = options.in_features();
  if (x.dim() == 0 || x.size(-1) != in)
    throw std::invalid_argument("Linear(" + std::to_string(in) + ", " +
                                std::to_string(options.out_features()) + "): input of shape " +
                                shape_to_string(x.sizes()) +
                                " must end in in_features = " + std::to_string(in));
  return linear(x, weight, bias);
}

GELUImpl::GELUImpl(const GELUOptions& options_) : options(options_) {
  if (options.approximate() != "none" && options.approximate() != "tanh")
    throw std::invalid_argument("GELU: approximate must be \"none\" or \"tanh\", got \"" +
                                options.approximate() + "\"");
}

void GELUImpl::pretty_print(std::ostream& os) const {
  os << "torch::nn::GELU()";
}

Tensor GELUImpl::forward(const Tensor& x) {
  return gelu(x, options.approximate());
}

void ReLUImpl::pretty_print(std::ostream& os) const {
  os << "torch::nn::ReLU(" << (options.inplace() ? "inplace=true" : "") << ")";
}

Tensor ReLUImpl::forward(const Tensor& x) {
  return relu(x);
}

Tensor SigmoidImpl::forward(const Tensor& x) {
  return sigmoid(x);
}

Tensor TanhImpl::forward(const Tensor& x) {
  return tanh(x);
}

void FlattenImpl::pretty_print(std::ostream& os) const {
  os << "torch::nn::Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim()
     << ")";
}

Tensor FlattenImpl::forward(const Tensor& x) {
  const int64_t rank = std::max<int64_t>(x.dim(), 1);
  int64_t start = options.start_dim() < 0 ? options.start_dim() + rank : options.start_dim();
  int64_t end = options.end_dim() < 0 ? options.end_dim() + rank : options.end_dim();
  if (start < 0 || start >= rank || end < 0 || end >= rank || start > end)
    throw std::invalid_argument("Flatten(start_dim=" + std::to_string(options.start_dim()) +
                                ", end_dim=" + std::to_string(options.end_dim()) +
                                "): the dims must lie within an input of shape " +
                                shape_to_string(x.sizes()) + ", start before end");
  if (x.dim() == 0) return x.reshape({1});
  IntList shape(x.sizes().begin(), x.sizes().begin() + start);
  int64_t merged = 1;
  for (int64_t d = start; d <= end; ++d) merged *= x.size(d);
  shape.push_back(merged);
  shape.insert(shape.end(), x.sizes().begin() + end + 1, x.sizes().end());
  return x.reshape(shape);
}

EmbeddingImpl::EmbeddingImpl(const EmbeddingOptions& options_) : options(options_) {
  const int64_t num = options.num_embeddings(), dim = options.embedding_dim();
  check_positive("Embedding", "num_embeddings", num);
  check_positive("Embedding", "embedding_dim", dim);
  std::optional<int64_t>& padding_idx = options.padding_idx();
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

void EmbeddingImpl::pretty_print(std::ostream& os) const {
  os << "torch::nn::Embedding(num_embeddings=" << options.num_embeddings()
     << ", embedding_dim=" << options.embedding_dim();
  if (options.padding_idx()) os << ", padding_idx=" << *options.padding_idx();
  os << ")";
}

Tensor EmbeddingImpl::forward(const Tensor& indices) {
  if (indices.dtype() != DType::i64 && indices.dtype() != DType::i32)
    throw std::invalid_argument("Embedding: indices must be i64 or i32, got " +
                                std::string(dtype_name(indices.dtype())) +
                                "; convert them with .to(DType::i64)");
  return embedding(weight, indices, options.padding_idx().value_or(-1));
}

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) {
  const IntList& shape = options.normalized_shape();
  if (shape.empty())
    throw std::invalid_argument(
        "LayerNorm: normalized_shape is empty; give the trailing dims to normalise over");
  for (int64_t s : shape) check_positive("LayerNorm", "normalized_shape entry", s);
  if (options.elementwise_affine()) {
    weight = parameter(ones(shape));
    bias = parameter(zeros(shape));
  }
  register_parameter("weight", weight);
  register_parameter("bias", bias);
}

void LayerNormImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::LayerNorm(" << shape_to_string(options.normalized_shape())
     << ", eps=" << options.eps() << ", elementwise_affine=" << options.elementwise_affine() << ")";
}

Tensor LayerNormImpl::forward(const Tensor& x) {
  return layer_norm(x, options.normalized_shape(), weight, bias, options.eps());
}

DropoutImpl::DropoutImpl(const DropoutOptions& options_) : options(options_) {
  check_probability("Dropout", options.p());
}

void DropoutImpl::pretty_print(std::ostream& os) const {
  os << std::boolalpha << "torch::nn::Dropout(p=" << options.p()
     << ", inplace=" << options.inplace() << ")";
}

Tensor DropoutImpl::forward(const Tensor& x) {
  return dropout(x, options.p(), is_training());
}

}  // namespace aotgrad::nn
