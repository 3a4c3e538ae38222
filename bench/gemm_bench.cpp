// GEMM throughput of aotgrad::mm (oneDNN for f32, the blocked loop nest for f64) on square
// matrices, 1 and 2 OpenMP threads. Reports GFLOP/s (2 n^3 flops per product).
#include <benchmark/benchmark.h>
#include <omp.h>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;

namespace {

void run_mm(benchmark::State& state, ag::DType dtype) {
  const int64_t n = state.range(0);
  omp_set_num_threads(static_cast<int>(state.range(1)));
  ag::Tensor a = ag::randn({n, n}, dtype), b = ag::randn({n, n}, dtype);
  ag::Tensor warm = ag::mm(a, b);  // creates and caches the oneDNN primitive
  for (auto _ : state) {
    ag::Tensor c = ag::mm(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * static_cast<double>(n * n * n),
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void BM_mm_f32(benchmark::State& state) {
  run_mm(state, ag::DType::f32);
}
void BM_mm_f64(benchmark::State& state) {
  run_mm(state, ag::DType::f64);
}

}  // namespace

BENCHMARK(BM_mm_f32)
    ->ArgsProduct({{512, 1024, 2048}, {1, 2}})
    ->ArgNames({"n", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_mm_f64)
    ->ArgsProduct({{512, 1024}, {1, 2}})
    ->ArgNames({"n", "threads"})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
