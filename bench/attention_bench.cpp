// The fused attention rows (aotgrad.masked_attention and its backward, kernels/attention.h)
// against the eager composite they replace, on the transformer block's attention (heads of a
// fused qkv projection: q, k, v [8, 4, 128, 64] strided views, causal mask), in one run:
//
//   OMP_NUM_THREADS=2 build/attention_bench [repetitions] [sequence length, 128]
//
// Prints the best forward and forward+backward time of each and the ratio composite / fused.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <limits>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "torch_peer.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

Tensor composite(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                 double scale) {
  Tensor s = ag::mul(ag::matmul(q, k.transpose(-2, -1)), ag::Scalar(scale));
  s = ag::masked_fill(s, mask, ag::Scalar(-std::numeric_limits<double>::infinity()));
  return ag::matmul(ag::softmax(s, -1), v);
}

Tensor fused(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask, double scale) {
  static const ag::ops::OpDef& row = ag::ops::lookup("aotgrad.masked_attention.default");
  return ag::ops::call1(row, {q, k, v, mask, scale});
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::max(5, std::atoi(argv[1])) : 30;
  const int64_t B = 8, T = argc > 2 ? std::max(1, std::atoi(argv[2])) : 128, H = 4, D = 64,
                C = H * D;
  ag::manual_seed(0);
  Tensor qkv = ag::randn({B, T, 3 * C});
  std::vector<bool> future(static_cast<size_t>(T * T));
  for (int64_t i = 0; i < T; ++i)
    for (int64_t j = 0; j < T; ++j) future[static_cast<size_t>(i * T + j)] = j > i;
  Tensor mask = ag::from_vector(future, {T, T});
  const double scale = 1.0 / std::sqrt(double(D));
  using Attend = std::function<Tensor(const Tensor&, const Tensor&, const Tensor&)>;
  const Attend variants[2] = {[&](const Tensor& q, const Tensor& k, const Tensor& v) {
                                return composite(q, k, v, mask, scale);
                              },
                              [&](const Tensor& q, const Tensor& k, const Tensor& v) {
                                return fused(q, k, v, mask, scale);
                              }};
  std::vector<double> fw[2], step[2];
  Tensor grad = ag::randn({B, H, T, D});
  for (int r = 0; r < reps + 2; ++r)
    for (int v = 0; v < 2; ++v) {
      Tensor leaf = qkv.detach().requires_grad_();
      std::vector<Tensor> parts = ag::split(leaf, C, 2);
      auto head = [&](const Tensor& t) { return t.reshape({B, T, H, D}).transpose(1, 2); };
      double t0 = torch_peer::now_ms();
      Tensor out;
      {
        ag::NoGradGuard no_grad;
        out = variants[v](head(parts[0]), head(parts[1]), head(parts[2]));
      }
      double t1 = torch_peer::now_ms();
      out = variants[v](head(parts[0]), head(parts[1]), head(parts[2]));
      ag::sum(ag::mul(out, grad)).backward();
      double t2 = torch_peer::now_ms();
      if (r < 2) continue;
      fw[v].push_back(t1 - t0);
      step[v].push_back(t2 - t1);
    }
  const double cf = torch_peer::min_of(fw[0]), ff = torch_peer::min_of(fw[1]);
  const double cs = torch_peer::min_of(step[0]), fs = torch_peer::min_of(step[1]);
  std::printf(
      "attention [8,4,%lld,64], causal, best of %d (ms)   composite    fused   composite/fused\n",
      static_cast<long long>(T), reps);
  std::printf("  forward (no_grad)                              %8.3f %8.3f %8.2f\n", cf, ff,
              cf / ff);
  std::printf("  forward + backward                             %8.3f %8.3f %8.2f\n", cs, fs,
              cs / fs);
  return 0;
}
