// The three reference models of issue 5 (MLP, pre-LN transformer block, 4 blocks + final
// LayerNorm), written against the public API as functions of a flat input list so that the
// partition bench and the partition tests share them. Each returns the loss.
#pragma once

#include <cmath>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace partition_models {

using aotgrad::Tensor;
namespace ag = aotgrad;

// A weight-like leaf with values in [-1/sqrt(fan_in), 1/sqrt(fan_in)).
inline Tensor param(const ag::IntList& sizes, int64_t fan_in) {
  Tensor t = ag::rand(sizes) * (2.0 / std::sqrt(static_cast<double>(fan_in))) -
             1.0 / std::sqrt(static_cast<double>(fan_in));
  return t.detach().requires_grad_();
}

// ---- (a) MLP: 4 x Linear(1024, 1024) with GELU between, batch 64, MSE loss ----
// inputs: x [64,1024], target [64,1024], then (weight [1024,1024], bias [1024]) x 4.
struct MlpShape {
  int64_t batch = 64, width = 1024, layers = 4;
};

inline std::vector<Tensor> mlp_inputs(const MlpShape& s = {}) {
  ag::manual_seed(1);
  std::vector<Tensor> in{ag::randn({s.batch, s.width}), ag::randn({s.batch, s.width})};
  for (int64_t l = 0; l < s.layers; ++l) {
    in.push_back(param({s.width, s.width}, s.width));
    in.push_back(param({s.width}, s.width));
  }
  return in;
}

inline Tensor mlp_loss(const std::vector<Tensor>& in) {
  Tensor h = in[0];
  const size_t layers = (in.size() - 2) / 2;
  for (size_t l = 0; l < layers; ++l) {
    h = ag::linear(h, in[2 + 2 * l], in[3 + 2 * l]);
    if (l + 1 < layers) h = ag::gelu(h);
  }
  return ag::mse_loss(h, in[1]);
}

// ---- (b) pre-LN transformer block, (c) 4 blocks + final LayerNorm ----
struct BlockShape {
  int64_t batch = 8, seq = 128, d = 256, heads = 4, hidden = 1024;
};

// LayerNorm over the last dim, as a composite of mean / sub / mul / rsqrt.
inline Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b) {
  Tensor mu = ag::mean(x, {-1}, true);
  Tensor xc = x - mu;
  Tensor var = ag::mean(xc * xc, {-1}, true);
  return xc * ag::rsqrt(var + 1e-5) * w + b;
}

constexpr size_t kParamsPerBlock = 12;

// Block parameters, in the order block() reads them.
inline void append_block_params(std::vector<Tensor>& in, const BlockShape& s) {
  in.push_back(ag::ones({s.d}).requires_grad_());   // ln1 weight
  in.push_back(ag::zeros({s.d}).requires_grad_());  // ln1 bias
  in.push_back(param({3 * s.d, s.d}, s.d));         // qkv weight
  in.push_back(param({3 * s.d}, s.d));              // qkv bias
  in.push_back(param({s.d, s.d}, s.d));             // out-proj weight
  in.push_back(param({s.d}, s.d));                  // out-proj bias
  in.push_back(ag::ones({s.d}).requires_grad_());   // ln2 weight
  in.push_back(ag::zeros({s.d}).requires_grad_());  // ln2 bias
  in.push_back(param({s.hidden, s.d}, s.d));        // fc1 weight
  in.push_back(param({s.hidden}, s.d));             // fc1 bias
  in.push_back(param({s.d, s.hidden}, s.hidden));   // fc2 weight
  in.push_back(param({s.d}, s.hidden));             // fc2 bias
}

// `p` points at the block's kParamsPerBlock parameters; `mask` is true above the diagonal.
inline Tensor block(const Tensor& x, const Tensor* p, const Tensor& mask, const BlockShape& s) {
  const int64_t hd = s.d / s.heads;
  Tensor h = layer_norm(x, p[0], p[1]);
  Tensor qkv = ag::linear(h, p[2], p[3]);  // [B, S, 3d]
  Tensor heads = ag::permute(ag::view(qkv, {s.batch, s.seq, 3, s.heads, hd}), {2, 0, 3, 1, 4});
  Tensor q = ag::select(heads, 0, 0), k = ag::select(heads, 0, 1), v = ag::select(heads, 0, 2);
  Tensor scores =
      ag::matmul(q, ag::transpose(k, -2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  Tensor masked = ag::where(mask, ag::full({}, -1e9), scores);  // masked_fill
  Tensor attn = ag::matmul(ag::softmax(masked, -1), v);         // [B, H, S, hd]
  Tensor merged = ag::reshape(ag::transpose(attn, 1, 2), {s.batch, s.seq, s.d});
  Tensor r = x + ag::linear(merged, p[4], p[5]);
  Tensor m = ag::linear(ag::gelu(ag::linear(layer_norm(r, p[6], p[7]), p[8], p[9])), p[10], p[11]);
  return r + m;
}

// inputs: x [B,S,d], target [B,S,d], causal mask b8 [S,S], then kParamsPerBlock per block, then
// (for more than one block) the final LayerNorm's weight and bias.
inline std::vector<Tensor> blocks_inputs(int64_t num_blocks, const BlockShape& s = {}) {
  ag::manual_seed(2);
  std::vector<Tensor> in{ag::randn({s.batch, s.seq, s.d}), ag::randn({s.batch, s.seq, s.d})};
  in.push_back(ag::gt(ag::unsqueeze(ag::arange(s.seq), 0), ag::unsqueeze(ag::arange(s.seq), 1)));
  for (int64_t b = 0; b < num_blocks; ++b) append_block_params(in, s);
  if (num_blocks > 1) {
    in.push_back(ag::ones({s.d}).requires_grad_());
    in.push_back(ag::zeros({s.d}).requires_grad_());
  }
  return in;
}

inline Tensor blocks_loss(const std::vector<Tensor>& in, const BlockShape& s = {}) {
  const size_t num_blocks = (in.size() - 3) / kParamsPerBlock;
  Tensor h = in[0];
  for (size_t b = 0; b < num_blocks; ++b) h = block(h, &in[3 + b * kParamsPerBlock], in[2], s);
  if (num_blocks > 1) h = layer_norm(h, in[in.size() - 2], in[in.size() - 1]);
  return ag::mse_loss(h, in[1]);
}

}  // namespace partition_models
