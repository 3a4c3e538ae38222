// Helpers the op-table rows share: errors that name the op, dim wrapping, and the reshaping of
// gradients that reduction VJPs need.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "aotgrad/ops.h"
#include "aotgrad/tensor.h"

namespace aotgrad::ops {

// Throws std::invalid_argument("<op>: <what>").
[[noreturn]] inline void fail(std::string_view op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

// `dim` wrapped into [0, ndim); out of range is an error that names the op.
inline int64_t dim_arg(std::string_view op, int64_t dim, int64_t ndim) {
  try {
    return wrap_dim(dim, ndim);
  } catch (const std::invalid_argument& e) {
    fail(op, e.what());
  }
}

// A reduction's output gradient with the reduced dims (ascending) restored as size 1, so that it
// broadcasts against the input; a no-op under keepdim.
inline Tensor restore_reduced_dims(Tensor g, const IntList& dims, bool keepdim) {
  if (keepdim) return g;
  for (int64_t d : dims) g = unsqueeze(g, d);  // ascending, so each index is already final
  return g;
}

// `g` in `like`'s dtype: autograd hands a VJP the output's gradient, whose dtype may differ from
// the input's (a `dtype=` argument, a mixed-dtype op), and the input's gradient must have the
// input's dtype.
inline Tensor cast_like(const Tensor& g, const Tensor& like) {
  return g.dtype() == like.dtype() ? g : to(g, like.dtype());
}

}  // namespace aotgrad::ops
