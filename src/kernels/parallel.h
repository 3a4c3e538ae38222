// OpenMP helpers that also compile when a kernel is built without an OpenMP region.
#pragma once

#include <omp.h>

namespace aotgrad {
inline int omp_get_num_threads_safe() { return omp_get_num_threads(); }
inline int omp_get_thread_num_safe() { return omp_get_thread_num(); }
}  // namespace aotgrad
