// Metadata-mutating in-place ops: they change a tensor's sizes, strides or storage offset in
// place, leaving its data alone (PyTorch's t_, transpose_, unsqueeze_, squeeze_, as_strided_).
//
//   Tensor x = aotgrad::randn({2, 3});
//   Tensor alias = x;            // another handle to the same tensor
//   aotgrad::transpose_(x, 0, 1);
//   alias.sizes();               // {3, 2}: every handle sees the new geometry
//
// As in PyTorch: each call bumps the version counter of the storage; a leaf that requires grad
// (or a view of one) cannot be mutated while grad mode is on; a non-leaf gets the view's backward
// as its grad_fn. Under aot_function the new geometry of an input is applied to the caller's
// tensor after the compiled call.
#pragma once

#include <cstdint>
#include <optional>

#include "aotgrad/tensor.h"

namespace aotgrad {

// self.t() in place; self must have at most 2 dimensions.
Tensor& t_(Tensor& self);
Tensor& transpose_(Tensor& self, int64_t dim0, int64_t dim1);
Tensor& unsqueeze_(Tensor& self, int64_t dim);
// Removes dim when its size is 1; otherwise leaves the geometry as it is (and still bumps the
// version counter, as PyTorch does).
Tensor& squeeze_(Tensor& self, int64_t dim);
// New geometry over the same storage; storage_offset defaults to self's current one.
Tensor& as_strided_(Tensor& self, const IntList& size, const IntList& stride,
                    std::optional<int64_t> storage_offset = std::nullopt);

}  // namespace aotgrad
