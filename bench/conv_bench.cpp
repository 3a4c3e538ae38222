// Convolution rate against the GEMM rate, measured in one run: a ResNet 3x3 conv 64 -> 64 on
// 56x56, batch 8 (f32; forward, and forward + both backward passes), and a 1024^3 mm as the
// reference. Rounds interleave so drift on a shared machine hits every case alike. Prints the
// median GFLOP/s of each and the conv / mm ratios. Then relu(conv(x) + x) (a residual block
// without batch norm) and relu(conv(x)) under no_grad: eager against the cpp compiler's default
// schedule and against it with CppOptions::conv_epilogues (oneDNN post-ops), min of 20 rounds.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "backends/cpp/cpp_backend.h"
#include "graph/parser.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

double seconds(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double best(const std::vector<double>& v) {
  return *std::max_element(v.begin(), v.end());
}

}  // namespace

int main() {
  ag::manual_seed(0);
  const int64_t N = 8, C = 64, H = 56, W = 56, O = 64, K = 3;
  Tensor x = ag::randn({N, C, H, W}), w = ag::randn({O, C, K, K});
  Tensor xg = x.detach().requires_grad_(), wg = w.detach().requires_grad_();
  Tensor g = ag::randn({N, O, H, W});
  Tensor a = ag::randn({1024, 1024}), b = ag::randn({1024, 1024});
  const double conv_flops = 2.0 * N * O * H * W * C * K * K;
  const double mm_flops = 2.0 * 1024 * 1024 * 1024;

  auto forward = [&] {
    ag::NoGradGuard no_grad;
    ag::conv2d(x, w, Tensor(), {1}, {1});
  };
  auto training = [&] {
    xg.set_grad(Tensor());
    wg.set_grad(Tensor());
    ag::conv2d(xg, wg, Tensor(), {1}, {1}).backward(g);
  };
  auto matmul = [&] { ag::mm(a, b); };
  for (int i = 0; i < 3; ++i) {
    forward();
    training();
    matmul();
  }
  std::vector<double> fw, tr, mm;
  for (int round = 0; round < 15; ++round) {
    fw.push_back(conv_flops / seconds(forward) / 1e9);
    tr.push_back(3 * conv_flops / seconds(training) / 1e9);
    mm.push_back(mm_flops / seconds(matmul) / 1e9);
  }
  const double f = median(fw), t = median(tr), m = median(mm);
  // Medians for the typical rate; the best round shows what the code does when the machine
  // lets it run (the two differ a lot on a shared machine).
  std::printf("threads %d; GFLOP/s median (best)\n", omp_get_max_threads());
  std::printf("conv3x3 64->64 56x56 b8 forward           %7.1f (%7.1f)  %.2f x mm\n", f, best(fw),
              f / m);
  std::printf("conv3x3 64->64 56x56 b8 forward+backward  %7.1f (%7.1f)  %.2f x mm\n", t, best(tr),
              t / m);
  std::printf("mm 1024^3                                 %7.1f (%7.1f)\n", m, best(mm));

  // relu(conv(x) + x) and relu(conv(x)) under no_grad: eager (three / two ops) against the cpp
  // compiler's schedule as it is by default (the convolution an extern call, then one generated
  // kernel) and with CppOptions::conv_epilogues (one oneDNN convolution with post-ops).
  const std::string conv_call =
      "aten.convolution.default(%x, %w, none, stride=[1, 1], padding=[1, 1], dilation=[1, 1], "
      "transposed=false, output_padding=[0, 0], groups=1)";
  const std::string sig = "(%x: f32[8,64,56,56], %w: f32[64,64,3,3]) {\n";
  const std::string block_text = "graph block" + sig + "  %c: f32[8,64,56,56] = " + conv_call +
                                 "\n  %s: f32[8,64,56,56] = aten.add.Tensor(%c, %x)\n"
                                 "  %r: f32[8,64,56,56] = aten.relu.default(%s)\n  return (%r)\n}";
  const std::string relu_text = "graph conv_relu" + sig + "  %c: f32[8,64,56,56] = " + conv_call +
                                "\n  %r: f32[8,64,56,56] = aten.relu.default(%c)\n  return (%r)\n}";
  ag::backends::CppOptions fused;
  fused.conv_epilogues = true;
  ag::NoGradGuard no_grad;
  const char* names[2] = {"relu(conv3x3(x) + x)", "relu(conv3x3(x))"};
  std::function<void()> eager[2] = {
      [&] { (ag::conv2d(x, w, Tensor(), {1}, {1}) + x).relu(); },
      [&] { ag::conv2d(x, w, Tensor(), {1}, {1}).relu(); }};
  for (int k = 0; k < 2; ++k) {
    ag::graph::Graph g = ag::graph::parse_graph(k == 0 ? block_text : relu_text);
    ag::backends::CompiledGraph plain = ag::backends::compile_cpp(g);
    ag::backends::CompiledGraph with_post_ops = ag::backends::compile_cpp(g, fused);
    std::function<void()> variants[3] = {eager[k], [&] { plain({x, w}); },
                                         [&] { with_post_ops({x, w}); }};
    std::vector<double> ms[3];
    for (int round = 0; round < 20; ++round)
      for (int v = 0; v < 3; ++v) ms[v].push_back(1e3 * seconds(variants[v]));
    double best_ms[3];
    for (int v = 0; v < 3; ++v) best_ms[v] = *std::min_element(ms[v].begin(), ms[v].end());
    std::printf(
        "%-21s no_grad, min ms: eager %.2f, cpp %.2f, cpp + conv post-ops %.2f; eager / cpp "
        "%.2f, eager / post-ops %.2f\n",
        names[k], best_ms[0], best_ms[1], best_ms[2], best_ms[0] / best_ms[1],
        best_ms[0] / best_ms[2]);
  }
  return 0;
}
