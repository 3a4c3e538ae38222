// aot_function against eager, measured in one run: the spirals MLP training step, and the
// per-call overhead of a tiny compiled forward+backward (interpreter and cpp). Prints medians and
// ratios.
//
// `aot_bench calls eager|compiled|cpp N` runs only the tiny call, N times after a warm-up, inside
// `measured_calls` so that an instruction count per call needs no wall clock (the machine is
// shared): valgrind --tool=callgrind --toggle-collect='*measured_calls*' build/aot_bench calls
// compiled 1000, then Ir / 1000.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "../examples/spirals_mlp.h"
#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

template <typename F>
double median_us(F&& f, int reps) {
  std::vector<double> us;
  us.reserve(reps);
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

void zero_grads(std::vector<Tensor>& params) {
  for (Tensor& p : params) p.set_grad(Tensor());
}

// The region callgrind counts (--toggle-collect); noinline keeps it a symbol of its own.
[[gnu::noinline]] void measured_calls(const std::function<void()>& call, int n) {
  for (int i = 0; i < n; ++i) call();
}

Tensor tiny_fn(const Tensor& p, const Tensor& q) {
  return (p * q).sin().sum();
}

// `calls eager|compiled|cpp N`: the tiny forward+backward only, for instruction counts.
int calls_only(const char* which, int n) {
  Tensor a = ag::randn({8}).requires_grad_(), b = ag::randn({8}).requires_grad_();
  const bool cpp = std::strcmp(which, "cpp") == 0;
  const bool compiled = cpp || std::strcmp(which, "compiled") == 0;
  if (!compiled && std::strcmp(which, "eager") != 0) {
    std::fprintf(stderr, "aot_bench calls: expected eager, compiled or cpp, got '%s'\n", which);
    return 2;
  }
  ag::AotConfig config;  // compiled: the interpreter; cpp: generated code
  config.fw_compiler = cpp ? "cpp" : "interpreter";
  auto tiny = ag::aot_function(tiny_fn, config);
  std::function<void()> call = [&] {
    (compiled ? tiny(a, b) : tiny_fn(a, b)).backward();
    a.set_grad(Tensor());
    b.set_grad(Tensor());
  };
  for (int i = 0; i < 200; ++i) call();  // warm-up: compile, caches, allocator pools
  measured_calls(call, n);
  std::printf("%s: %d calls\n", which, n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ag::manual_seed(0);
  if (argc == 4 && std::strcmp(argv[1], "calls") == 0)
    return calls_only(argv[2], std::atoi(argv[3]));
  auto [x, y] = spirals::make_spirals();
  std::vector<Tensor> params = spirals::init_params();
  ag::AotConfig interpreter;  // "compiled" lines: the interpreter; "cpp" lines: generated code
  interpreter.fw_compiler = "interpreter";
  auto step = ag::aot_function(spirals::loss_fn, interpreter);
  auto eager = [&] {
    spirals::loss_fn(params, x, y).backward();
    zero_grads(params);
  };
  auto compiled = [&] {
    step(params, x, y).backward();
    zero_grads(params);
  };
  for (int i = 0; i < 20; ++i) {
    eager();
    compiled();
  }
  double e_us = 0, c_us = 0;
  // Interleave rounds so drift on a shared machine hits both sides alike.
  std::vector<double> es, cs;
  for (int round = 0; round < 5; ++round) {
    es.push_back(median_us(eager, 60));
    cs.push_back(median_us(compiled, 60));
  }
  std::sort(es.begin(), es.end());
  std::sort(cs.begin(), cs.end());
  e_us = es[2];
  c_us = cs[2];
  ag::CompiledGraphs g = step.graphs();
  std::printf("spirals MLP step (fwd+bwd, batch 512, hidden 64):\n");
  std::printf("  eager %.1f us, compiled %.1f us, compiled/eager = %.3f\n", e_us, c_us,
              c_us / e_us);
  std::printf("  saved for backward: %zu values, %zu bytes (%zu bytes activations)\n", g.num_saved,
              g.saved_bytes, g.saved_activation_bytes);

  Tensor a = ag::randn({8}).requires_grad_(), b = ag::randn({8}).requires_grad_();
  auto tiny = ag::aot_function(tiny_fn, interpreter);
  ag::AotConfig cpp_config;
  cpp_config.fw_compiler = "cpp";
  auto tiny_cpp = ag::aot_function(tiny_fn, cpp_config);
  auto tiny_eager = [&] {
    tiny_fn(a, b).backward();
    a.set_grad(Tensor());
    b.set_grad(Tensor());
  };
  auto tiny_compiled = [&] {
    tiny(a, b).backward();
    a.set_grad(Tensor());
    b.set_grad(Tensor());
  };
  auto tiny_generated = [&] {
    tiny_cpp(a, b).backward();
    a.set_grad(Tensor());
    b.set_grad(Tensor());
  };
  for (int i = 0; i < 1000; ++i) {
    tiny_eager();
    tiny_compiled();
    tiny_generated();
  }
  double te = median_us(tiny_eager, 20000), tc = median_us(tiny_compiled, 20000),
         tg = median_us(tiny_generated, 20000);
  std::printf("(a*b).sin().sum() on 8 elements, forward+backward per call:\n");
  std::printf("  eager %.2f us, compiled %.2f us, compiled/eager = %.3f\n", te, tc, tc / te);
  std::printf("  cpp compiler %.2f us, cpp/eager = %.3f\n", tg, tg / te);
  std::printf("  (reference on this machine: LibTorch eager ~13 us, PyTorch AOTAutograd ~29 us)\n");
  return 0;
}
