// Whether compiled functions built with the default compiler must match eager bit for bit. The
// interpreter runs the eager kernels node by node, so it must; the `cpp` code generator (under
// AOTGRAD_COMPILER=cpp) fuses pointwise chains and has its own exp/erf/tanh, so it matches to a
// few ulp instead. Tests of runtime semantics that compare with eager use exact() to choose.
#pragma once

#include "aotgrad/compiler.h"

namespace aotgrad::testing {

inline bool default_compiler_is_exact() {
  return default_compiler() == "interpreter";
}

// Relative tolerance for compiled-vs-eager comparisons under the default compiler: 0 (bitwise)
// for the interpreter, a few f32 ulp for code that fuses and reassociates.
inline double compiled_rtol() {
  return default_compiler_is_exact() ? 0.0 : 1e-6;
}

}  // namespace aotgrad::testing
