// A character-level GPT (nanoGPT's layout): token and position embeddings, pre-LN transformer
// blocks, a final LayerNorm and a linear head over the vocabulary.
//
// forward(idx, targets) returns the mean cross-entropy of predicting targets[b, t] from
// idx[b, 0..t]: the whole training loss is one function of the parameters, so aot_module compiles
// the loss with the model and backward starts from a compiled graph.
#pragma once

#include <cstdint>
#include <memory>

#include "aotgrad/aotgrad.h"

namespace gpt {

struct GptConfig {
  int64_t vocab_size = 0;
  int64_t block_size = 64;  // longest context
  int64_t n_layer = 2;
  int64_t n_head = 4;
  int64_t n_embd = 128;
};

class Gpt : public aotgrad::nn::Module {
 public:
  explicit Gpt(const GptConfig& config);
  std::string type_name() const override { return "Gpt"; }
  using Module::forward;
  // idx, targets: i64 [batch, seq <= block_size]. The mean cross-entropy, a scalar.
  aotgrad::Tensor forward(const aotgrad::Tensor& idx, const aotgrad::Tensor& targets);
  // f32 [batch, seq, vocab_size].
  aotgrad::Tensor logits(const aotgrad::Tensor& idx);

  GptConfig config;
  std::shared_ptr<aotgrad::nn::EmbeddingImpl> tok_emb, pos_emb;
  std::shared_ptr<aotgrad::nn::SequentialImpl> blocks;
  std::shared_ptr<aotgrad::nn::LayerNormImpl> ln_f;
  std::shared_ptr<aotgrad::nn::LinearImpl> head;
};

}  // namespace gpt
