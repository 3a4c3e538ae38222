// Training-step time of the three reference models of issue 3 part 6, eager and through
// aot_module, with the ratio of each to PyTorch 1.13's eager time and to its matmul-only floor,
// both quoted in the issue for this machine; then the f32 GEMM rate at 1 and 2 threads.
//
//   ./build/models_bench [iterations_scale]     (default 1; 0.2 for a quick look)
//
// One step = zero_grad, forward, MSE loss against a fixed target, backward (no optimizer update,
// so every step does the same work). Eager and compiled steps alternate inside one loop so both
// see the same machine noise; the table prints the best step of each (on a shared machine the
// best is the least disturbed; medians follow in brackets). The loss runs eagerly after the
// compiled module in both columns.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <omp.h>

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

double best(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

struct Result {
  std::string name;
  double eager_ms, compiled_ms, eager_median, compiled_median, torch_ms, torch_mm_ms;
};

template <typename M>
Result bench(const std::string& name, std::shared_ptr<M> model, const Tensor& x, const Tensor& target,
             int iterations, double torch_ms, double torch_mm_ms) {
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
  return {name, best(te), best(tc), median(te), median(tc), torch_ms, torch_mm_ms};
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

// GFLOP/s of one n x n x n f32 product on `threads` OpenMP threads: best of `reps`.
double gemm_rate(int64_t n, int threads, int reps) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  Tensor a = ag::randn({n, n}), b = ag::randn({n, n});
  Tensor warm = ag::mm(a, b);  // creates and caches the oneDNN primitive
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    double t0 = now_ms();
    Tensor c = ag::mm(a, b);
    ms.push_back(now_ms() - t0);
  }
  omp_set_num_threads(saved);
  return 2.0 * static_cast<double>(n * n * n) / (best(ms) * 1e6);
}

// Matmul flops of one training step: forward products, and two products of the same size each
// in backward (input and weight gradients).
double mlp_step_gflop() { return 3 * 4 * 2.0 * 64 * 1024 * 1024 / 1e9; }
double block_step_gflop() {
  const double tokens = 8 * 128, d = 256, hidden = 1024, heads_x_batch = 8 * 4, t = 128, dh = 64;
  double linear = 2 * tokens * d * (3 * d + d + 2 * hidden);
  double attention = 2 * (2 * heads_x_batch * t * t * dh);
  return 3 * (linear + attention) / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
  auto iters = [&](int n) { return std::max(3, static_cast<int>(n * scale)); };
  ag::manual_seed(0);
  // The GEMM rate of this moment, to tell how much of each step is matmul on this machine now.
  const int threads = omp_get_max_threads();
  const double rate_now = gemm_rate(1024, threads, 10);
  std::vector<Result> results;
  std::vector<double> gflop = {mlp_step_gflop(), block_step_gflop(), 4 * block_step_gflop()};
  {
    Tensor x = ag::randn({64, 1024}), target = ag::randn({64, 1024});
    results.push_back(bench("MLP 4x1024, batch 64", mlp(), x, target, iters(40), 5.2, 3.1));
  }
  {
    Tensor x = ag::randn({8, 128, 256}), target = ag::randn({8, 128, 256});
    auto block = std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024);
    results.push_back(bench("transformer block", block, x, target, iters(20), 16.7, 11.0));
    results.push_back(bench("4 blocks + LayerNorm", blocks(4), x, target, iters(8), 68.5, 44.0));
  }
  std::printf("%-22s %17s %17s %10s %11s %14s %12s\n", "model", "eager ms (median)",
              "compiled (median)", "comp/eager", "eager/torch", "compiled/torch", "eager/floor");
  for (const Result& r : results)
    std::printf("%-22s %7.2f (%7.2f) %7.2f (%7.2f) %10.2f %11.2f %14.2f %12.2f\n", r.name.c_str(),
                r.eager_ms, r.eager_median, r.compiled_ms, r.compiled_median, r.compiled_ms / r.eager_ms,
                r.eager_ms / r.torch_ms, r.compiled_ms / r.torch_ms, r.eager_ms / r.torch_mm_ms);
  std::printf("(torch = PyTorch 1.13 eager on this machine, quoted in issue 3: 5.2, 16.7, 68.5 ms;\n"
              " floor = its matmul-only time for the same step: 3.1, 11.0, 44 ms)\n\n");
  // On a shared machine the ratios to torch mostly measure the load; the step time over the
  // matmul time at the GEMM rate just measured does not, and torch's own is step / floor.
  std::printf("%-22s %10s %14s %16s %14s\n", "model", "GFLOP/step", "est. matmul ms", "eager/est.matmul",
              "torch/floor");
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    double mm_ms = gflop[i] / rate_now * 1e3;
    std::printf("%-22s %10.2f %14.2f %16.2f %14.2f\n", r.name.c_str(), gflop[i], mm_ms, r.eager_ms / mm_ms,
                r.torch_ms / r.torch_mm_ms);
  }
  std::printf("(est. matmul = GFLOP / %.1f GFLOP/s, the 1024^3 f32 rate on %d threads measured at start)\n\n",
              rate_now, threads);
  std::printf("%-22s %10s %10s %9s\n", "f32 GEMM GFLOP/s", "1 thread", "2 threads", "2t/1t");
  for (int64_t n : {512, 1024, 2048}) {
    const int reps = n >= 2048 ? 5 : 20;
    double r1 = gemm_rate(n, 1, reps), r2 = gemm_rate(n, 2, reps);
    std::printf("  n = %-16lld %10.1f %10.1f %9.2f\n", static_cast<long long>(n), r1, r2, r2 / r1);
  }
  return 0;
}
