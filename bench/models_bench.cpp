// Training-step time of the three reference models, eager and through aot_module, side by side
// with PyTorch 1.13's eager step measured in the same run:
//
//   ../shared/bench/torch_peer/run.sh -- build/models_bench [iterations_scale] [mlp|block|gpt4]
//
// (a model name runs that model only: for `perf record`.)
// run.sh times PyTorch first and names a JSON file of its best times in TORCH_PEER_JSON; without
// it this prints our times only. The models are those of run.sh's torch_models.py: MLP = 4 x
// Linear(1024, 1024) with exact GELU between them, batch 64; block = the pre-LN transformer block
// (d 256, 4 heads, MLP 1024, causal attention as matmul -> scale -> masked_fill -> softmax ->
// matmul), input [8, 128, 256]; gpt4 = 4 blocks + LayerNorm(256).
//
// One step = grads set to None, forward, MSE loss against a fixed target, backward (no
// optimizer, so every step does the same work). Eager and compiled steps alternate inside one
// loop so both see the same machine noise; the table prints the best step of each (on a shared
// machine the best is the least disturbed) and the median. The loss runs eagerly after the
// compiled module. "compiled" uses the interpreter, "cpp" the cpp backend without attention
// fusion, "cpp+attn" the cpp backend as configured by default (AotConfig::fuse_attention on: one
// fused attention row per block).
// Ratios are PyTorch's time / ours: above 1 we are faster.
#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "torch_peer.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;
using torch_peer::median_of;
using torch_peer::min_of;
using torch_peer::now_ms;

namespace {

struct Result {
  std::string key, name;
  double gflop;
  double eager_ms, compiled_ms, eager_median, compiled_median;
  double cpp_ms, cpp_median;    // compiled with the cpp backend
  double attn_ms, attn_median;  // cpp with AotConfig::fuse_attention
};

template <typename M>
Result bench(const std::string& key, const std::string& name, double gflop,
             std::shared_ptr<M> model, const Tensor& x, const Tensor& target, int iterations) {
  ag::AotConfig interpreter_cfg;  // the "compiled" column: the interpreter, whatever the default
  interpreter_cfg.fw_compiler = "interpreter";
  auto compiled = ag::aot_module(model, interpreter_cfg);
  ag::AotConfig cpp_cfg;
  cpp_cfg.fw_compiler = "cpp";
  cpp_cfg.fuse_attention = false;
  auto compiled_cpp = ag::aot_module(model, cpp_cfg);
  ag::AotConfig attn_cfg = cpp_cfg;
  attn_cfg.fuse_attention = true;
  auto compiled_attn = ag::aot_module(model, attn_cfg);
  auto step = [&](const std::function<Tensor(const Tensor&)>& fwd) {
    model->zero_grad(/*set_to_none=*/true);
    Tensor loss = ag::mse_loss(fwd(x), target);
    loss.backward();
  };
  auto eager = [&](const Tensor& in) { return model->forward(in); };
  auto aot = [&](const Tensor& in) { return compiled(in); };
  auto aot_cpp = [&](const Tensor& in) { return compiled_cpp(in); };
  auto aot_attn = [&](const Tensor& in) { return compiled_attn(in); };
  for (int i = 0; i < 3; ++i) {  // warm-up; the first compiled call traces and compiles
    step(eager);
    step(aot);
    step(aot_cpp);
    step(aot_attn);
  }
  std::vector<double> te, tc, tp, ta;
  for (int i = 0; i < iterations; ++i) {
    double t0 = now_ms();
    step(eager);
    double t1 = now_ms();
    step(aot);
    double t2 = now_ms();
    step(aot_cpp);
    double t3 = now_ms();
    step(aot_attn);
    double t4 = now_ms();
    te.push_back(t1 - t0);
    tc.push_back(t2 - t1);
    tp.push_back(t3 - t2);
    ta.push_back(t4 - t3);
  }
  return {key,           name,       gflop,         min_of(te), min_of(tc),   median_of(te),
          median_of(tc), min_of(tp), median_of(tp), min_of(ta), median_of(ta)};
}

std::shared_ptr<nn::SequentialImpl> mlp() {
  auto m = std::make_shared<nn::SequentialImpl>();
  for (int i = 0; i < 4; ++i) {
    m->push_back(std::make_shared<nn::LinearImpl>(1024, 1024));
    if (i < 3) m->push_back(std::make_shared<nn::GELUImpl>("none"));
  }
  return m;
}

std::shared_ptr<nn::SequentialImpl> blocks(int n) {
  auto m = std::make_shared<nn::SequentialImpl>();
  for (int i = 0; i < n; ++i)
    m->push_back(std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024));
  m->push_back(std::make_shared<nn::LayerNormImpl>(ag::IntList{256}));
  return m;
}

// GFLOP/s of one n x n x n f32 product on the current thread count: best of `reps`.
double gemm_rate(int64_t n, int reps) {
  Tensor a = ag::randn({n, n}), b = ag::randn({n, n});
  Tensor warm = ag::mm(a, b);  // creates and caches the oneDNN primitive
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    double t0 = now_ms();
    Tensor c = ag::mm(a, b);
    ms.push_back(now_ms() - t0);
  }
  return 2.0 * static_cast<double>(n * n * n) / (min_of(ms) * 1e6);
}

// Matmul flops of one training step: the forward products, and two products of the same size
// each in backward (input and weight gradients).
double mlp_step_gflop() {
  return 3 * 4 * 2.0 * 64 * 1024 * 1024 / 1e9;
}
double block_step_gflop() {
  const double tokens = 8 * 128, d = 256, hidden = 1024, heads_x_batch = 8 * 4, t = 128, dh = 64;
  double linear = 2 * tokens * d * (3 * d + d + 2 * hidden);
  double attention = 2 * (2 * heads_x_batch * t * t * dh);
  return 3 * (linear + attention) / 1e9;
}

std::string ratio(std::optional<double> torch_ms, double ours) {
  if (!torch_ms) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", *torch_ms / ours);
  return buf;
}

std::string ms_pair(std::optional<double> min, std::optional<double> median) {
  if (!min || !median) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%7.2f (%7.2f)", *min, *median);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
  const std::string only = argc > 2 ? argv[2] : "";
  auto wanted = [&](const char* key) { return only.empty() || only == key; };
  auto iters = [&](int n) { return std::max(5, static_cast<int>(n * scale)); };
  const torch_peer::NumberTable torch = torch_peer::NumberTable::from_env("TORCH_PEER_JSON");
  ag::manual_seed(0);
  const int threads = omp_get_max_threads();
  const double rate_now = gemm_rate(1024, 10);  // how much of a step is matmul, at this moment
  std::vector<Result> results;
  if (wanted("mlp")) {
    Tensor x = ag::randn({64, 1024}), target = ag::randn({64, 1024});
    results.push_back(
        bench("mlp", "MLP 4x1024, batch 64", mlp_step_gflop(), mlp(), x, target, iters(40)));
  }
  {
    Tensor x = ag::randn({8, 128, 256}), target = ag::randn({8, 128, 256});
    auto block = std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024);
    if (wanted("block"))
      results.push_back(
          bench("block", "transformer block", block_step_gflop(), block, x, target, iters(20)));
    if (wanted("gpt4"))
      results.push_back(bench("gpt4", "4 blocks + LayerNorm", 4 * block_step_gflop(), blocks(4), x,
                              target, iters(8)));
  }
  std::printf("%-21s %17s %17s %17s %17s %17s %11s %14s %9s %10s %10s %10s %10s %8s %9s\n",
              "step ms: min (median)", "eager", "compiled", "cpp", "cpp+attn", "pytorch eager",
              "torch/eager", "torch/compiled", "torch/cpp", "torch/attn", "comp/eager", "eager/cpp",
              "eager/attn", "cpp/mm", "torch/mm");
  for (const Result& r : results) {
    const auto tmin = torch.get(r.key + ".step_ms_min");
    const auto tmed = torch.get(r.key + ".step_ms_median");
    const double mm_ms = r.gflop / rate_now * 1e3;
    std::printf(
        "%-21s %7.2f (%7.2f) %7.2f (%7.2f) %7.2f (%7.2f) %7.2f (%7.2f) %17s %11s %14s %9s %10s "
        "%10.2f %10.2f %10.2f %8.2f %9s\n",
        r.name.c_str(), r.eager_ms, r.eager_median, r.compiled_ms, r.compiled_median, r.cpp_ms,
        r.cpp_median, r.attn_ms, r.attn_median, ms_pair(tmin, tmed).c_str(),
        ratio(tmin, r.eager_ms).c_str(), ratio(tmin, r.compiled_ms).c_str(),
        ratio(tmin, r.cpp_ms).c_str(), ratio(tmin, r.attn_ms).c_str(), r.compiled_ms / r.eager_ms,
        r.eager_ms / r.cpp_ms, r.eager_ms / r.attn_ms, r.cpp_ms / mm_ms,
        ratio(tmin, mm_ms).c_str());
  }
  std::printf(
      "(torch/x = PyTorch's best step / ours: above 1 we are faster. cpp/mm = our cpp step over "
      "its\n matmul time at the %.0f GFLOP/s 1024^3 f32 rate measured at start, %d threads; torch/mm ="
      "\n PyTorch's best step / that matmul time: the most torch/x any step could reach that runs"
      "\n the same products at that rate.%s)\n",
      rate_now, threads,
      torch.loaded() ? "" : "\n No TORCH_PEER_JSON: run through ../shared/bench/torch_peer/run.sh");
  return 0;
}
