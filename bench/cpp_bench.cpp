// Training-step time of the three reference models (those of models_bench.cpp) eagerly and through
// aot_module with fw_compiler "interpreter", "cpp" without attention fusion and "cpp" as configured
// by default ("cpp_attn": AotConfig::fuse_attention on), in one run:
//
//   build/cpp_bench [iterations_scale] [mlp|block|gpt4] [eager|interp|cpp|cpp_attn]
//
// (a variant name runs only that variant in the timed loop: for `perf record`.)
//   build/cpp_bench [iterations_scale] ablate [variant]
// times the block step under cpp with each of its optimizations switched off in turn (only
// `variant`, 0-3, when given: for callgrind).
// One step = grads set to None, forward, MSE loss, backward. The four variants alternate inside
// one loop so they see the same machine noise; the table prints the best step of each (on a
// shared machine the best is the least disturbed; at least 5 repetitions) and the ratios
// eager / compiled (above 1: compiling helps). The first compiled calls trace and compile (the
// cpp backend's build cache makes a second run of the bench skip the C++ compiler); the cold
// compile time of each variant is printed too. After the table row, a few steps of each cpp
// variant run with the step profile on (backends/cpp/step_profile.h) and the row below says how
// much of a step the matrix products take, measured; the profiled steps' mean wall time / that time
// is the "step / GEMM-only" figure.
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/nn.h"
#include "backends/cpp/cpp_backend.h"
#include "backends/cpp/step_profile.h"
#include "torch_peer.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;
using torch_peer::min_of;

namespace {

// Wall time, or with AOTGRAD_BENCH_CPU_TIME=1 the process's CPU time: on a loaded machine, run
// with OMP_NUM_THREADS=1 and CPU time to compare the work of the variants rather than the noise.
double now_ms() {
  static const bool cpu = [] {
    const char* e = std::getenv("AOTGRAD_BENCH_CPU_TIME");
    return e && *e == '1';
  }();
  if (!cpu) return torch_peer::now_ms();
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

std::string only_variant;

template <typename M>
void bench(const std::string& name, std::shared_ptr<M> model, const Tensor& x, const Tensor& target,
           int iterations) {
  ag::AotConfig interp_cfg, cpp_cfg, attn_cfg;
  interp_cfg.fw_compiler = "interpreter";
  cpp_cfg.fw_compiler = "cpp";
  attn_cfg.fw_compiler = "cpp";
  cpp_cfg.fuse_attention = false;
  attn_cfg.fuse_attention = true;
  auto interp = ag::aot_module(model, interp_cfg);
  auto cpp = ag::aot_module(model, cpp_cfg);
  auto attn = ag::aot_module(model, attn_cfg);
  auto step = [&](const std::function<Tensor(const Tensor&)>& fwd) {
    model->zero_grad(/*set_to_none=*/true);
    Tensor loss = ag::mse_loss(fwd(x), target);
    loss.backward();
  };
  constexpr int kVariants = 4;
  std::function<Tensor(const Tensor&)> variants[kVariants] = {
      [&](const Tensor& in) { return model->forward(in); },
      [&](const Tensor& in) { return interp(in); }, [&](const Tensor& in) { return cpp(in); },
      [&](const Tensor& in) { return attn(in); }};
  double first_ms[kVariants];
  for (int v = 0; v < kVariants; ++v) {
    double t0 = now_ms();
    step(variants[v]);
    first_ms[v] = now_ms() - t0;
  }
  for (int i = 0; i < 2; ++i)
    for (auto& f : variants) step(f);
  // The table AOTGRAD_PROFILE=1 prints at exit covers the timed steps only: the first calls hold
  // one-time costs (the process's first oneDNN sgemm takes ~30 ms, inside whichever node calls
  // it first), which made the fused attention's forward read twice its steady time.
  ag::backends::cpp::reset_step_profile();
  std::vector<double> t[kVariants];
  for (int i = 0; i < iterations; ++i)
    for (int v = 0; v < kVariants; ++v) {
      static const char* names[kVariants] = {"eager", "interp", "cpp", "cpp_attn"};
      if (!only_variant.empty() && only_variant != names[v]) {
        t[v].push_back(0);
        continue;
      }
      double t0 = now_ms();
      step(variants[v]);
      t[v].push_back(now_ms() - t0);
    }
  double e = min_of(t[0]), in = min_of(t[1]), c = min_of(t[2]), a = min_of(t[3]);
  std::printf("%-22s %8.2f %8.2f %8.2f %8.2f %12.2f %12.2f %12.2f   %7.0f %7.0f %7.0f\n",
              name.c_str(), e, in, c, a, e / in, e / c, e / a, first_ms[1], first_ms[2],
              first_ms[3]);
  if (!only_variant.empty()) return;
  // Then a few more steps of each cpp variant with the step profile on: how much of a step its
  // matrix products (oneDNN, fused or extern) take, measured rather than estimated from a GEMM
  // rate. The fused attention kernel's products are not counted as products (they run inside
  // it), so cpp_attn's step is also divided by the unfused variant's products: every GEMM of the
  // model, measured in this run ("step / all GEMMs").
  namespace prof = ag::backends::cpp;
  const int profiled = std::max(3, iterations / 4);
  double all_gemms = 0;
  for (int v : {2, 3}) {
    prof::reset_step_profile();
    prof::set_step_profiling(true);
    const double wall0 = now_ms();
    for (int i = 0; i < profiled; ++i) step(variants[v]);
    const double wall = (now_ms() - wall0) / profiled;
    prof::set_step_profiling(false);
    double products = 0, all = 0, attention = 0;
    for (const prof::StepTime& r : prof::step_profile()) {
      all += r.ms;
      if (r.product) products += r.ms;
      if (r.label.find("masked_attention") != std::string::npos) attention += r.ms;
    }
    prof::reset_step_profile();
    if (v == 2) all_gemms = products / profiled;
    std::printf(
        "  %s, %d profiled steps: products %.2f ms, fused attention %.2f ms, of %.2f ms in steps; "
        "step %.2f ms; step / products %.2f; step / all GEMMs %.2f\n",
        v == 2 ? "cpp" : "cpp_attn", profiled, products / profiled, attention / profiled,
        all / profiled, wall, wall / (products / profiled), wall / all_gemms);
  }
}

// Per-call overhead: (a*b).sin().sum() on 8 elements, forward + backward, median of 20000.
void tiny_call() {
  Tensor a = ag::randn({8}).requires_grad_(), b = ag::randn({8}).requires_grad_();
  auto fn = [](const Tensor& p, const Tensor& q) { return (p * q).sin().sum(); };
  ag::AotConfig interp_cfg, cpp_cfg;
  interp_cfg.fw_compiler = "interpreter";
  cpp_cfg.fw_compiler = "cpp";
  auto interp = ag::aot_function(fn, interp_cfg);
  auto cpp = ag::aot_function(fn, cpp_cfg);
  auto per_call_us = [&](auto& f) {
    std::vector<double> us;
    for (int i = 0; i < 20000; ++i) {
      double t0 = torch_peer::now_ms();
      f(a, b).backward();
      a.set_grad(Tensor());
      b.set_grad(Tensor());
      us.push_back((torch_peer::now_ms() - t0) * 1e3);
    }
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  };
  per_call_us(interp);
  per_call_us(cpp);
  double ti = per_call_us(interp), tc = per_call_us(cpp), te = per_call_us(fn);
  std::printf(
      "(a*b).sin().sum(), 8 elements, fw+bw per call (median us): eager %.2f, interp %.2f, "
      "cpp %.2f\n",
      te, ti, tc);
}

// The cpp backend's optimizations one at a time on the transformer block's training step, in one
// loop: default, without GEMM epilogues (oneDNN post-ops), without in-place buffer reuse, without
// kernels writing into cat slices. Prints
// the best step and the step's peak bytes above what was live before it.
void ablation(int iterations, int only) {
  auto block = std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024);
  Tensor x = ag::randn({8, 128, 256}), target = ag::randn({8, 128, 256});
  constexpr int kVariants = 4;
  const char* names[kVariants] = {"cpp", "cpp, no GEMM epilogues", "cpp, no buffer reuse",
                                  "cpp, no cat fusion"};
  ag::backends::CppOptions options[kVariants];
  options[1].gemm_epilogues = false;
  options[2].reuse_buffers = false;
  options[3].cat_fusion = false;
  std::vector<std::function<Tensor(const Tensor&)>> variants;
  for (const ag::backends::CppOptions& o : options) {
    ag::AotConfig cfg;
    cfg.fw_compiler_fn = [o](const ag::GraphView& g) {
      return ag::backends::compile_cpp(g.graph(), o);
    };
    auto compiled = ag::aot_module(block, cfg);
    variants.push_back([compiled](const Tensor& in) mutable { return compiled(in); });
  }
  std::vector<double> t[kVariants];
  size_t peak[kVariants] = {};
  for (int i = 0; i < iterations + 2; ++i)
    for (int v = 0; v < kVariants; ++v) {
      if (only >= 0 && v != only) continue;
      block->zero_grad(/*set_to_none=*/true);
      ag::reset_peak_memory_stats();
      size_t before = ag::memory_stats().bytes_in_use;
      double t0 = now_ms();
      ag::mse_loss(variants[v](x), target).backward();
      if (i >= 2) t[v].push_back(now_ms() - t0);
      peak[v] = ag::memory_stats().peak_bytes_in_use - before;
    }
  std::printf("transformer block step, best of %d:\n", iterations);
  for (int v = 0; v < kVariants; ++v)
    if (only < 0 || v == only)
      std::printf("  %-24s %8.2f ms  peak %7.2f MiB\n", names[v], min_of(t[v]),
                  static_cast<double>(peak[v]) / (1 << 20));
}

}  // namespace

int main(int argc, char** argv) {
  const double scale = argc > 1 ? std::atof(argv[1]) : 1.0;
  const std::string only = argc > 2 ? argv[2] : "";
  only_variant = argc > 3 ? argv[3] : "";
  auto wanted = [&](const char* key) { return only.empty() || only == key; };
  auto iters = [&](int n) { return std::max(5, static_cast<int>(n * scale)); };
  ag::manual_seed(0);
  if (only == "ablate") {
    ablation(iters(10), argc > 3 ? std::atoi(argv[3]) : -1);
    return 0;
  }
  std::printf("%-22s %8s %8s %8s %8s %12s %12s %12s   %7s %7s %7s\n", "best step ms", "eager",
              "interp", "cpp", "cpp_attn", "eager/interp", "eager/cpp", "eager/attn", "1st int",
              "1st cpp", "1st att");
  if (wanted("mlp")) {
    auto m = std::make_shared<nn::SequentialImpl>();
    for (int i = 0; i < 4; ++i) {
      m->push_back(std::make_shared<nn::LinearImpl>(1024, 1024));
      if (i < 3) m->push_back(std::make_shared<nn::GELUImpl>("none"));
    }
    bench("MLP 4x1024, batch 64", m, ag::randn({64, 1024}), ag::randn({64, 1024}), iters(20));
  }
  Tensor x = ag::randn({8, 128, 256}), target = ag::randn({8, 128, 256});
  if (wanted("block"))
    bench("transformer block", std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024), x, target,
          iters(10));
  if (wanted("gpt4")) {
    auto m = std::make_shared<nn::SequentialImpl>();
    for (int i = 0; i < 4; ++i)
      m->push_back(std::make_shared<nn::TransformerBlock>(256, 4, 128, 1024));
    m->push_back(std::make_shared<nn::LayerNormImpl>(ag::IntList{256}));
    bench("4 blocks + LayerNorm", m, x, target, iters(5));
  }
  if (wanted("tiny")) tiny_call();
  std::printf("(%d threads; 1st = first call incl. trace, partition and compile, ms)\n",
              omp_get_max_threads());
  return 0;
}
