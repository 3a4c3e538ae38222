// The candidates for the vector transcendentals, side by side: SLEEF's functions (what vec.h's
// kernels use) and Highway's own (hwy/contrib/math), compiled for the same targets. Only
// bench/pointwise_bench.cpp uses this, to show by measurement why the kernels take SLEEF's: on
// the same inputs it times both and measures their errors against libm in double.
//
// Thread-safety: the kernels are pure functions; math_candidates() is initialized once.
#pragma once

#include <span>

#include "kernels/vec/vec.h"

namespace aotgrad::kernels::vec {

struct MathCandidate {
  const char* name;            // "exp", "log", "tanh"
  UnaryKernel<float> sleef;    // SLEEF's entry point for the active target (as vec.h's kernels)
  UnaryKernel<float> highway;  // Highway's hwy/contrib/math for the same target
};

// exp, log and tanh in f32, for the best target this CPU runs.
std::span<const MathCandidate> math_candidates();

}  // namespace aotgrad::kernels::vec
