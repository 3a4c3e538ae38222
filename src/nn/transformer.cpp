// Causal self-attention, the transformer MLP and the pre-LN block, written as issue 3 part 6
// asks: matmul -> scale -> masked_fill with the causal mask -> softmax -> matmul, so the traced
// graph holds exactly the ops PyTorch's make_fx records for the same module.
#include <cmath>
#include <limits>
#include <stdexcept>

#include "aotgrad/indexing.h"
#include "aotgrad/nn/layers.h"
#include "aotgrad/ops.h"

namespace aotgrad::nn {

CausalSelfAttention::CausalSelfAttention(int64_t d, int64_t heads, int64_t block, double p,
                                         bool bias)
    : d_model(d), n_heads(heads), block_size(block) {
  if (d <= 0 || heads <= 0 || d % heads != 0)
    throw std::invalid_argument("CausalSelfAttention: d_model (" + std::to_string(d) +
                                ") must be a positive multiple of n_heads (" +
                                std::to_string(heads) + ")");
  if (block <= 0)
    throw std::invalid_argument("CausalSelfAttention: block_size must be positive, got " +
                                std::to_string(block));
  qkv = register_module("qkv", std::make_shared<LinearImpl>(d, 3 * d, bias));
  proj = register_module("proj", std::make_shared<LinearImpl>(d, d, bias));
  attn_dropout = register_module("attn_dropout", std::make_shared<DropoutImpl>(p));
  resid_dropout = register_module("resid_dropout", std::make_shared<DropoutImpl>(p));
  std::vector<bool> future(static_cast<size_t>(block * block));
  for (int64_t i = 0; i < block; ++i)
    for (int64_t j = 0; j < block; ++j) future[static_cast<size_t>(i * block + j)] = j > i;
  mask = from_vector(future, {block, block});
  register_buffer("mask", mask);
}

Tensor CausalSelfAttention::forward(const Tensor& x) {
  if (x.dim() != 3 || x.size(2) != d_model || x.size(1) > block_size)
    throw std::invalid_argument(
        "CausalSelfAttention: input must be [batch, seq <= " + std::to_string(block_size) + ", " +
        std::to_string(d_model) + "], got " + shape_to_string(x.sizes()));
  const int64_t B = x.size(0), T = x.size(1), C = d_model, H = n_heads, D = C / H;
  std::vector<Tensor> parts = split(qkv->forward(x), C, 2);
  auto heads = [&](const Tensor& t) {
    return t.reshape({B, T, H, D}).transpose(1, 2);
  };  // [B, H, T, D]
  Tensor q = heads(parts[0]), k = heads(parts[1]), v = heads(parts[2]);
  Tensor att = matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(D)));
  Tensor future = mask.slice(0, 0, T).slice(1, 0, T);
  att = masked_fill(att, future, -std::numeric_limits<double>::infinity());
  att = attn_dropout->forward(softmax(att, -1));
  Tensor y = matmul(att, v).transpose(1, 2).reshape({B, T, C});
  return resid_dropout->forward(proj->forward(y));
}

MLP::MLP(int64_t d, int64_t hidden, double p, const std::string& approximate) {
  fc1 = register_module("fc1", std::make_shared<LinearImpl>(d, hidden));
  act = register_module("act", std::make_shared<GELUImpl>(approximate));
  fc2 = register_module("fc2", std::make_shared<LinearImpl>(hidden, d));
  dropout = register_module("dropout", std::make_shared<DropoutImpl>(p));
}

Tensor MLP::forward(const Tensor& x) {
  return dropout->forward(fc2->forward(act->forward(fc1->forward(x))));
}

TransformerBlock::TransformerBlock(int64_t d, int64_t heads, int64_t block, int64_t mlp_hidden,
                                   double p) {
  ln1 = register_module("ln1", std::make_shared<LayerNormImpl>(IntList{d}));
  attn = register_module("attn", std::make_shared<CausalSelfAttention>(d, heads, block, p));
  ln2 = register_module("ln2", std::make_shared<LayerNormImpl>(IntList{d}));
  mlp = register_module("mlp", std::make_shared<MLP>(d, mlp_hidden, p));
}

Tensor TransformerBlock::forward(const Tensor& x) {
  Tensor h = x + attn->forward(ln1->forward(x));
  return h + mlp->forward(ln2->forward(h));
}

}  // namespace aotgrad::nn
