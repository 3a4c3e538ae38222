// OpenMP helpers that also compile when a kernel is built without an OpenMP region.
#pragma once

#include <omp.h>

#include <cstdint>

namespace aotgrad {
inline int omp_get_num_threads_safe() { return omp_get_num_threads(); }
inline int omp_get_thread_num_safe() { return omp_get_thread_num(); }

// Runs body(tid, nt) on an OpenMP team when `parallel`, else inline as thread 0 of 1. libgomp
// allocates and frees a team even for `#pragma omp parallel if (false)` (about 1,500
// instructions), which outweighs the work of a kernel over a few elements.
template <typename Body>
void parallel_or_inline(bool parallel, const Body& body) {
  if (!parallel) {
    body(0, 1);
    return;
  }
#pragma omp parallel
  body(omp_get_thread_num(), omp_get_num_threads());
}
}  // namespace aotgrad

// Where part `part` of `parts` equal parts of [0, n) begins: n * part / parts, computed in 128
// bits because the product wraps for n past INT64_MAX / parts, which a reduction over an expanded
// view reaches (2^62 elements viewing one), and a wrapped split skips or repeats elements.
inline int64_t part_begin(int64_t n, int part, int parts) {
  return static_cast<int64_t>(static_cast<__int128>(n) * part / parts);
}
