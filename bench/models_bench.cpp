// Training-step time of the three reference models of issue 3 part 6, eager and through
// aot_module, with the ratio of each to PyTorch 1.13's eager time quoted for this machine.
//
//   ./build/models_bench [iterations_scale]     (default 1; 0.2 for a quick look)
//
// One step = zero_grad, forward, MSE loss against a fixed target, backward (no optimizer update,
// so every step does the same work). Eager and compiled steps alternate inside one loop so both
// see the same machine noise; the table prints medians. The loss runs eagerly after the compiled
// module in both columns.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;

namespace {

double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Result {
  std::string name;
  double eager_ms, compiled_ms, torch_ms;
};

template <typename M>
Result bench(const std::string& name, std::shared_ptr<M> model, const Tensor& x, const Tensor& target,
             int iterations, double torch_ms) {
  auto compiled = ag::aot_module(model);
  auto step = [&](const std::function<Tensor(const Tensor&)>& fwd) {
    model->zero_grad();
    Tensor loss = ag::mse_loss(fwd(x), target);
    loss.backward();
  };
  auto eager = [&](const Tensor& in) { return model->forward(in); };
  auto aot = [&](const Tensor& in) { return compiled(in); };
  for (int i = 0; i < 2; ++i) {  // warm-up; the first compiled call traces and compiles
    step(eager);
    step(aot);
  }
  std::vector<double> te, tc;
  for (int i = 0; i < iterations; ++i) {
    double t0 = now_ms();
    step(eager);
    double t1 = now_ms();
    step(aot);
    double t2 = now_ms();
    te.push_back(t1 - t0);
    tc.push_back(t2 - t1);
  }
  return {name, median(te), median(tc), torch_ms};
}

std::shared_ptr<nn::Sequential> mlp() {
  auto m = std::make_shared<nn::Sequential>();
  for (int i = 0; i < 4; ++i) {
    m->push_back(std::make_shared<nn::Linear>(1024, 1024));
    if (i < 3) m->push_back(std::make_shared<nn::GELU>());
  }
  return m;
}

std::shared_ptr<nn::Sequential> blocks(int n) {
  auto m = std::make_shared<nn::Sequential>();
  for (int i = 0; i < n; ++i) m->push_back(std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024));
  m->push_back(std::make_shared<nn::LayerNorm>(ag::IntList{256}));
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
  auto iters = [&](int n) { return std::max(3, static_cast<int>(n * scale)); };
  ag::manual_seed(0);
  std::vector<Result> results;
  {
    Tensor x = ag::randn({64, 1024}), target = ag::randn({64, 1024});
    results.push_back(bench("MLP 4x1024, batch 64", mlp(), x, target, iters(40), 5.2));
  }
  {
    Tensor x = ag::randn({8, 128, 256}), target = ag::randn({8, 128, 256});
    auto block = std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024);
    results.push_back(bench("transformer block", block, x, target, iters(20), 16.7));
    results.push_back(bench("4 blocks + LayerNorm", blocks(4), x, target, iters(8), 68.5));
  }
  std::printf("%-24s %10s %12s %10s %14s %16s\n", "model", "eager ms", "compiled ms", "comp/eager",
              "eager/torch", "compiled/torch");
  for (const Result& r : results)
    std::printf("%-24s %10.2f %12.2f %10.2f %14.2f %16.2f\n", r.name.c_str(), r.eager_ms, r.compiled_ms,
                r.compiled_ms / r.eager_ms, r.eager_ms / r.torch_ms, r.compiled_ms / r.torch_ms);
  std::printf("(torch = PyTorch 1.13 eager on this machine, quoted in issue 3: 5.2, 16.7, 68.5 ms)\n");
  return 0;
}
