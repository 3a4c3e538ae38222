// Helpers the op-table rows share: errors that name the op, dim wrapping, the reshaping of
// gradients that reduction VJPs need, and the VJP of ops that overwrite their input.
#pragma once

#include <array>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "aotgrad/ops.h"
#include "aotgrad/tensor.h"
#include "ops/op.h"
#include "tensor/overlap.h"

namespace aotgrad::ops {

// Throws std::invalid_argument("<op>: <what>").
[[noreturn]] inline void fail(std::string_view op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

// The meta of an in-place op's result: self itself, same geometry. A self with an expanded dim
// (tensor/overlap.h) is an error naming the op, as in PyTorch: one element written several times.
inline TensorMeta in_place_self_meta(std::string_view op, const Tensor& self) {
  if (std::optional<size_t> d = first_expanded_dim(self.sizes(), self.strides()))
    fail(op,
         "more than one element of the written-to tensor refers to a single memory location "
         "(dim " +
             std::to_string(*d) + " is expanded). Call clone() on it first.");
  return {self.dtype(), self.sizes(), self.strides(), self.storage_offset()};
}

// A backward op's `bool[3] output_mask` argument (ATen's; held in OpArgs as an int[] of 0 / 1, see
// ArgSchema::bool_elements) at index `i`. A list of another length is an error that names the op
// and, from `entries`, the three gradients it selects.
inline std::array<bool, 3> output_mask_arg(std::string_view op, const OpArgs& a, size_t i,
                                           std::string_view entries) {
  const IntList& m = int_list_arg(a, i);
  if (m.size() != 3)
    fail(op, "output_mask must have 3 entries (" + std::string(entries) + "), got " +
                 std::to_string(m.size()));
  return {m[0] != 0, m[1] != 0, m[2] != 0};
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

// The VJP of an op whose result does not depend on its input's values (fill, zero and their
// in-place forms): the input gets zeros.
inline std::vector<Tensor> overwrite_vjp(const VjpContext& c) {
  return {c.needs(0) ? zeros_like(c.grad()) : Tensor()};
}

}  // namespace aotgrad::ops
