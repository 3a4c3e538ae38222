// Eager CPU kernels of PyTorch's advanced indexing: `self[indices]` (aten.index.Tensor) and
// `self[indices] = values` (aten.index_put), where `indices` holds, per leading dim of self, None
// (the whole dim) or an index tensor: i64 indices (negative ones count from the end) or a b8 mask
// that covers as many dims as it has and picks the positions where it is true.
//
// The rules are ATen's: the index tensors broadcast together to one shape B; the result is B in
// place of the indexed dims when those are adjacent, and B first followed by the other dims of
// self when a None separates them. Every index value is checked before anything is written: an
// out-of-range one throws std::invalid_argument naming the op, the value and the dim.
#pragma once

#include <string_view>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// The result shape of self[indices] for index tensors of the given sizes (nullptr: None), with
// i64 indices only (a mask's shape depends on its values). Throws std::invalid_argument naming
// `op` when there are more indices than dims or the index shapes do not broadcast.
IntList index_result_sizes(std::string_view op, const IntList& self_sizes,
                           const std::vector<const IntList*>& index_sizes);

// self[indices] as a fresh contiguous tensor of self's dtype.
Tensor index(std::string_view op, const Tensor& self, const std::vector<Tensor>& indices);

// A fresh copy of self with self[indices] = values (accumulate: +=, duplicates summed); values
// broadcast to the shape of self[indices] and have self's dtype.
Tensor index_put(std::string_view op, const Tensor& self, const std::vector<Tensor>& indices,
                 const Tensor& values, bool accumulate);

}  // namespace aotgrad::kernels
