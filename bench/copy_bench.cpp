// Strided copies against memcpy of the same bytes, measured in one run (issue 11 item 3: a
// 1024 x 1024 f32 transpose at >= 70% of memcpy's bandwidth).
//
//   ./build/copy_bench [samples]
//
// Every case copies into a destination allocated once (so page faults are not timed) through
// the public copy_ (planning, dispatch and the kernel), single-threaded and then on all OpenMP
// threads, each against memcpy of the same bytes on as many threads. Then the transpose kernel of
// each compiled ISA target this CPU runs, called directly, with plain and with streaming stores
// (copy_ takes the streaming one for destinations larger than the core's L2). Prints min and median
// microseconds over the samples and memcpy's min / ours (1.00 = memcpy's bandwidth).
#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/indexing.h"
#include "kernels/vec/copy.h"
#include "torch_peer.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

std::pair<double, double> time_us(const std::function<void()>& fn, int samples) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < samples; ++i) {
    const double t0 = torch_peer::now_ms();
    fn();
    t.push_back((torch_peer::now_ms() - t0) * 1e3);
  }
  return {torch_peer::min_of(t), torch_peer::median_of(t)};
}

void row(const std::string& name, std::pair<double, double> t, double memcpy_us) {
  std::printf("%-44s %9.1f (%9.1f) %12.2f\n", name.c_str(), t.first, t.second, memcpy_us / t.first);
}

}  // namespace

int main(int argc, char** argv) {
  const int samples = argc > 1 ? std::max(5, std::atoi(argv[1])) : 30;
  const int threads = omp_get_max_threads();
  ag::manual_seed(0);
  struct Case {
    std::string name;
    Tensor dst, src;
  };
  Tensor w = ag::randn({1024, 1024}), wd = ag::randn({1024, 1024}, ag::DType::f64);
  Tensor qkv = ag::randn({8, 128, 768}), y = ag::randn({8, 4, 128, 64});
  Tensor q = ag::transpose(ag::view(ag::split(qkv, 256, 2)[0], {8, 128, 4, 64}), 1, 2);
  std::vector<Case> cases = {
      {"transpose 1024x1024 f32", ag::empty({1024, 1024}), ag::t(w)},
      {"transpose 1000x1000 f32 (no 4 KiB stride)", ag::empty({1000, 1000}),
       ag::t(ag::randn({1000, 1000}))},
      {"contiguous 1024x1024 f32", ag::empty({1024, 1024}), w},
      {"transpose 1024x1024 f64", ag::empty({1024, 1024}, ag::DType::f64), ag::t(wd)},
      {"split heads [8,128,4,64] -> [8,4,128,64]", ag::empty({8, 4, 128, 64}), q},
      {"heads^T [8,4,64,128] from the split", ag::empty({8, 4, 64, 128}), ag::transpose(q, -2, -1)},
      {"merge heads [8,4,128,64] -> [8,128,4,64]", ag::empty({8, 128, 4, 64}),
       ag::transpose(y, 1, 2)},
      {"broadcast bias [1024] -> [1024,1024]", ag::empty({1024, 1024}),
       ag::expand(ag::randn({1024}), {1024, 1024})},
  };
  std::printf("%-44s %21s %12s   (us; memcpy on as many threads)\n",
              "copy_ into a preallocated dst", "min (median)", "memcpy/ours");
  for (int t : {1, threads}) {
    omp_set_num_threads(t);
    for (Case& c : cases) {
      const size_t bytes = static_cast<size_t>(c.dst.numel()) * ag::itemsize(c.dst.dtype());
      std::vector<char> a(bytes, 1), b(bytes);
      // memcpy on the same threads: each copies its share of the bytes.
      const auto mc = time_us(
          [&] {
#pragma omp parallel num_threads(t)
            {
              const size_t n = static_cast<size_t>(omp_get_num_threads());
              const size_t i = static_cast<size_t>(omp_get_thread_num());
              const size_t begin = bytes * i / n, end = bytes * (i + 1) / n;
              std::memcpy(b.data() + begin, a.data() + begin, end - begin);
            }
          },
          samples);
      const auto ours = time_us([&] { ag::copy_(c.dst, c.src); }, samples);
      row(c.name + ", " + std::to_string(t) + " thread" + (t > 1 ? "s" : ""), ours, mc.first);
    }
    if (threads == 1) break;
  }
  omp_set_num_threads(threads);
  std::printf("\ntranspose kernel per ISA target, 1024x1024 f32, one thread:\n");
  // Tensors' buffers: 64-byte aligned, as streaming stores need.
  Tensor src_t = ag::ones({1024, 1024}), dst_t = ag::empty({1024, 1024});
  const std::span<const float> src(src_t.data_ptr<float>(), 1024 * 1024);
  const std::span<float> dst(dst_t.data_ptr<float>(), 1024 * 1024);
  const auto mc = time_us([&] { std::memcpy(dst.data(), src.data(), src.size() * 4); }, samples);
  for (const auto* target : ag::kernels::vec::copy_targets()) {
    for (bool stream : {false, true}) {
      const auto fn = stream ? target->transpose_stream[2] : target->transpose[2];
      const auto t = time_us(
          [&] {
            fn(reinterpret_cast<char*>(dst.data()), 1024, reinterpret_cast<const char*>(src.data()),
               1024, 1024, 1024);
          },
          samples);
      row(std::string("  ") + target->name + (stream ? ", streaming stores" : ""), t, mc.first);
    }
  }
  std::printf("  memcpy %.1f us = %.1f GB/s (read + write)\n", mc.first,
              2.0 * static_cast<double>(src.size() * 4) / (mc.first * 1e3));
  return 0;
}
