// oneDNN matmul with the weight in plain row-major, transposed (nn.Linear's W^T view) and
// oneDNN's blocked layout (format_tag::any), plus the reorder into the blocked layout, at the
// shapes of the reference models (issue 11 item 5: keep the blocked layout only where it
// measures faster).
//
//   OMP_NUM_THREADS=1 ./build/gemm_layout_bench
//
// Min of 30 runs each, one run. The finding recorded in docs/performance.md: the blocked layout
// saves 5-12% of a product but its reorder costs more than that saving unless the same weight
// feeds several products. A training step changes every weight once per step and reads it in
// two orientations (forward W^T, backward W), so the step keeps the plain layouts.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <oneapi/dnnl/dnnl.hpp>
#include <vector>
using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;
template <class F>
double best(F f, int reps = 30) {
  f();
  double b = 1e9;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    b = std::min(
        b,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return b;
}
int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  int64_t shapes[][3] = {
      {1024, 1024, 256}, {1024, 256, 1024}, {1024, 256, 768}, {64, 1024, 1024}, {256, 1024, 1024}};
  for (auto& sh : shapes) {
    int64_t M = sh[0], K = sh[1], N = sh[2];
    memory::desc a({M, K}, dt::f32, tag::ab), c({M, N}, dt::f32, tag::ab);
    memory::desc b_plain({K, N}, dt::f32, tag::ab), b_t({K, N}, dt::f32, tag::ba),
        b_any({K, N}, dt::f32, tag::any);
    std::vector<float> A(M * K, 1.f), B(K * N, 0.5f), C(M * N);
    memory am(a, eng, A.data()), cm(c, eng, C.data());
    auto run = [&](memory::desc bd, const char* name) {
      matmul::primitive_desc pd(matmul::desc(a, bd, c), eng);
      matmul mm(pd);
      memory bm(pd.weights_desc(), eng);
      double reorder_ms = 0;
      if (pd.weights_desc() != b_plain && pd.weights_desc() != b_t) {
        memory src(b_t, eng, B.data());
        reorder r(src, bm);
        reorder_ms = best([&] {
          r.execute(s, src, bm);
          s.wait();
        });
      } else {
        bm = memory(bd, eng, B.data());
      }
      double t = best([&] {
        mm.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
        s.wait();
      });
      printf("  %-6s %-24s mm %.3f ms  reorder %.3f ms  (%.0f GFLOP/s)\n", name, pd.impl_info_str(),
             t, reorder_ms, 2.0 * M * N * K / t / 1e6);
    };
    printf("M=%ld K=%ld N=%ld\n", M, K, N);
    run(b_plain, "plain");
    run(b_t, "trans");
    run(b_any, "any");
  }
}
