// The main job: train an MLP on two interleaved spirals with a compiled training step, print the
// loss per epoch, then the measured ratio of compiled to eager step time.
//
//   ./build/train_mlp [epochs]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "spirals_mlp.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

using spirals::init_params;
using spirals::loss_fn;
using spirals::make_spirals;
constexpr double kLearningRate = 0.2;

void sgd_step(std::vector<Tensor>& params) {
  ag::NoGradGuard no_grad;
  for (Tensor& p : params) {
    p.add_(p.grad(), -kLearningRate);
    p.set_grad(Tensor());
  }
}

template <typename Step>
double median_step_ms(Step&& step, int reps) {
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    step();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int epochs = argc > 1 ? std::atoi(argv[1]) : 300;
  ag::manual_seed(0);
  auto [x, y] = make_spirals();
  std::vector<Tensor> params = init_params();
  auto step = ag::aot_function(loss_fn, ag::AotConfig{.name = "mlp_step"});

  for (int epoch = 1; epoch <= epochs; ++epoch) {
    Tensor loss = step(params, x, y);
    loss.backward();
    sgd_step(params);
    if (epoch == 1 || epoch % 25 == 0 || epoch == epochs)
      std::printf("epoch %4d  loss %.4f\n", epoch, loss.item<double>());
  }
  // Accuracy of the trained model.
  {
    ag::NoGradGuard no_grad;
    Tensor h = ag::linear(x, params[0], params[1]).tanh();
    h = ag::linear(h, params[2], params[3]).tanh();
    std::vector<float> logits = ag::linear(h, params[4], params[5]).to_vector<float>();
    std::vector<int64_t> labels = y.to_vector<int64_t>();
    int64_t correct = 0;
    for (size_t i = 0; i < labels.size(); ++i)
      correct += (logits[2 * i + 1] > logits[2 * i]) == (labels[i] == 1);
    std::printf("train accuracy %.1f%%\n", 100.0 * static_cast<double>(correct) / labels.size());
  }

  auto eager_step = [&] {
    loss_fn(params, x, y).backward();
    sgd_step(params);
  };
  auto compiled_step = [&] {
    step(params, x, y).backward();
    sgd_step(params);
  };
  for (int i = 0; i < 10; ++i) {
    eager_step();
    compiled_step();
  }
  double eager_ms = median_step_ms(eager_step, 100), compiled_ms = median_step_ms(compiled_step, 100);
  std::printf("step time (median of 100): eager %.3f ms, compiled %.3f ms, compiled/eager = %.2f\n",
              eager_ms, compiled_ms, compiled_ms / eager_ms);
  ag::CompiledGraphs g = step.graphs();
  std::printf("saved for backward: %zu values, %zu bytes (%zu bytes of activations)\n", g.num_saved,
              g.saved_bytes, g.saved_activation_bytes);
  return 0;
}
