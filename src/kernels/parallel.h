// OpenMP helpers that also compile when a kernel is built without an OpenMP region.
#pragma once

#include <omp.h>

#include <cstdint>

namespace aotgrad {
inline int omp_get_num_threads_safe() { return omp_get_num_threads(); }
inline int omp_get_thread_num_safe() { return omp_get_thread_num(); }
}  // namespace aotgrad

// Where part `part` of `parts` equal parts of [0, n) begins: n * part / parts, computed in 128
// bits because the product wraps for n past INT64_MAX / parts, which a reduction over an expanded
// view reaches (2^62 elements viewing one), and a wrapped split skips or repeats elements.
inline int64_t part_begin(int64_t n, int part, int parts) {
  return static_cast<int64_t>(static_cast<__int128>(n) * part / parts);
}
