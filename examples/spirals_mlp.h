// The two-spirals MLP shared by examples/train_mlp and bench/aot_bench: 2 -> 64 -> 64 -> 2 with
// ReLU. (With tanh the first ~100 AdamW steps sit on a plateau near 55% accuracy; ReLU leaves it
// within a few dozen, for every seed tried.)
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace spirals {

namespace ag = aotgrad;
using ag::Tensor;

constexpr int64_t kPointsPerClass = 256;
constexpr int64_t kHidden = 64;

// Two spirals, one per class, with a little noise. Each call draws new noise from the global
// generator, so a second call gives a held-out set of the same distribution.
inline std::pair<Tensor, Tensor> make_spirals() {
  std::vector<float> xy;
  std::vector<int64_t> labels;
  ag::Tensor noise = ag::randn({2 * kPointsPerClass, 2});
  std::vector<float> n = noise.to_vector<float>();
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < kPointsPerClass; ++i) {
      double r = static_cast<double>(i) / kPointsPerClass * 5.0 + 0.5;
      double theta = 1.75 * static_cast<double>(i) / kPointsPerClass * 2 * M_PI + c * M_PI;
      int64_t k = c * kPointsPerClass + i;
      xy.push_back(static_cast<float>(r * std::cos(theta) / 5.5 + 0.04 * n[2 * k]));
      xy.push_back(static_cast<float>(r * std::sin(theta) / 5.5 + 0.04 * n[2 * k + 1]));
      labels.push_back(c);
    }
  return {ag::from_vector(xy, {2 * kPointsPerClass, 2}), ag::from_vector(labels, {2 * kPointsPerClass})};
}

inline std::vector<Tensor> init_params() {
  std::vector<Tensor> params;
  int64_t sizes[][2] = {{kHidden, 2}, {kHidden, kHidden}, {2, kHidden}};
  for (auto& s : sizes) {
    double bound = 1.0 / std::sqrt(static_cast<double>(s[1]));
    params.push_back((ag::rand({s[0], s[1]}) * (2 * bound) - bound).detach().requires_grad_());
    params.push_back((ag::rand({s[0]}) * (2 * bound) - bound).detach().requires_grad_());
  }
  return params;
}

inline Tensor logits(const std::vector<Tensor>& p, const Tensor& x) {
  Tensor h = ag::linear(x, p[0], p[1]).relu();
  h = ag::linear(h, p[2], p[3]).relu();
  return ag::linear(h, p[4], p[5]);
}

inline Tensor loss_fn(const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
  return ag::cross_entropy(logits(p, x), y);
}

// Fraction of points whose larger logit is their label.
inline double accuracy(const std::vector<Tensor>& p, const Tensor& x, const Tensor& y) {
  ag::NoGradGuard no_grad;
  std::vector<float> z = logits(p, x).to_vector<float>();
  std::vector<int64_t> labels = y.to_vector<int64_t>();
  int64_t correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) correct += (z[2 * i + 1] > z[2 * i]) == (labels[i] == 1);
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

}  // namespace spirals
