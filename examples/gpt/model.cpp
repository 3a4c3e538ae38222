#include "model.h"

#include <stdexcept>
#include <string>

namespace gpt {

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;

Gpt::Gpt(const GptConfig& c) : config(c) {
  tok_emb = register_module("tok_emb", std::make_shared<nn::EmbeddingImpl>(c.vocab_size, c.n_embd));
  pos_emb = register_module("pos_emb", std::make_shared<nn::EmbeddingImpl>(c.block_size, c.n_embd));
  blocks = register_module("blocks", std::make_shared<nn::SequentialImpl>());
  for (int64_t i = 0; i < c.n_layer; ++i)
    blocks->push_back(
        std::make_shared<nn::TransformerBlock>(c.n_embd, c.n_head, c.block_size, 4 * c.n_embd));
  ln_f = register_module("ln_f", std::make_shared<nn::LayerNormImpl>(ag::IntList{c.n_embd}));
  head = register_module("head", std::make_shared<nn::LinearImpl>(c.n_embd, c.vocab_size));
  // nanoGPT's initialisation: N(0, 0.02) weights and zero biases train a small transformer
  // faster than PyTorch's layer defaults (N(0, 1) embeddings swamp the first LayerNorm).
  for (auto& [name, p] : named_parameters()) {
    bool is_bias = name.size() >= 4 && name.compare(name.size() - 4, 4, "bias") == 0;
    bool is_norm = name.find("ln") != std::string::npos;
    if (is_norm) continue;
    if (is_bias)
      nn::init::zeros_(p);
    else
      nn::init::normal_(p, 0.0, 0.02);
  }
}

Tensor Gpt::logits(const Tensor& idx) {
  const int64_t t = idx.size(1);
  if (t > config.block_size)
    throw std::invalid_argument("Gpt: a context of " + std::to_string(t) +
                                " characters is longer than block_size " +
                                std::to_string(config.block_size));
  Tensor x = tok_emb->forward(idx) + pos_emb->weight.slice(0, 0, t);
  return head->forward(ln_f->forward(blocks->forward(x)));
}

Tensor Gpt::forward(const Tensor& idx, const Tensor& targets) {
  Tensor z = logits(idx);
  const int64_t n = idx.size(0) * idx.size(1);
  return ag::cross_entropy(z.reshape({n, config.vocab_size}), targets.reshape({n}));
}

}  // namespace gpt
