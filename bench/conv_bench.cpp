// Convolution rate against the GEMM rate, measured in one run: a ResNet 3x3 conv 64 -> 64 on
// 56x56, batch 8 (f32; forward, and forward + both backward passes), and a 1024^3 mm as the
// reference. Rounds interleave so drift on a shared machine hits every case alike. Prints the
// median GFLOP/s of each and the conv / mm ratios. Then a residual block without batch norm,
// relu(conv(x) + x), under no_grad: eager (three ops) against aot_function on the cpp compiler
// (one oneDNN convolution with the add and relu as post-ops), min of the rounds, as a ratio.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "aotgrad/aotgrad.h"

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

  // relu(conv(x) + x) and relu(conv(x)): eager runs three (two) ops, cpp one convolution with
  // post-ops.
  auto block = [](const Tensor& in, const Tensor& weight) {
    return (ag::conv2d(in, weight, Tensor(), {1}, {1}) + in).relu();
  };
  auto conv_relu = [](const Tensor& in, const Tensor& weight) {
    return ag::conv2d(in, weight, Tensor(), {1}, {1}).relu();
  };
  ag::AotConfig cfg;
  cfg.fw_compiler = "cpp";
  auto compiled_block = ag::aot_function(block, cfg);
  auto compiled_conv_relu = ag::aot_function(conv_relu, cfg);
  ag::NoGradGuard no_grad;
  std::vector<double> ms[4];
  for (int round = 0; round < 20; ++round) {
    ms[0].push_back(1e3 * seconds([&] { block(x, w); }));
    ms[1].push_back(1e3 * seconds([&] { compiled_block(x, w); }));
    ms[2].push_back(1e3 * seconds([&] { conv_relu(x, w); }));
    ms[3].push_back(1e3 * seconds([&] { compiled_conv_relu(x, w); }));
  }
  double m4[4];
  for (int i = 0; i < 4; ++i) m4[i] = *std::min_element(ms[i].begin(), ms[i].end());
  std::printf("relu(conv3x3(x) + x), no_grad: eager %.2f ms, cpp %.2f ms, eager / cpp %.2f\n",
              m4[0], m4[1], m4[0] / m4[1]);
  std::printf("relu(conv3x3(x)), no_grad:     eager %.2f ms, cpp %.2f ms, eager / cpp %.2f\n",
              m4[2], m4[3], m4[2] / m4[3]);
  return 0;
}
