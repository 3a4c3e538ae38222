// Self-overlap by expansion: a dim of stride 0 and size above 1 (what expand makes) sends distinct
// indices to one memory location. PyTorch's cheap has_internal_overlap test says "overlaps" for
// exactly this, and so do we, in every place that must refuse or avoid such a tensor: in-place ops
// refuse to write it (fill_ and zero_ excepted: one value everywhere), autograd's CopySlices cannot
// lay a gradient out in it, and the tracer refuses the writes whose eager backward would raise.
// Other self-overlapping layouts (as_strided with strides smaller than the sizes they step over)
// are not detected here; kernels::is_non_overlapping (kernels/scatter.h) is the full test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "aotgrad/tensor.h"

namespace aotgrad {

// The first dim of (sizes, strides) that is expanded (stride 0, size above 1), or nullopt.
inline std::optional<size_t> first_expanded_dim(const IntList& sizes, const IntList& strides) {
  for (size_t d = 0; d < sizes.size() && d < strides.size(); ++d)
    if (strides[d] == 0 && sizes[d] > 1) return d;
  return std::nullopt;
}

inline bool is_expanded(const Tensor& t) {
  return first_expanded_dim(t.sizes(), t.strides()).has_value();
}

}  // namespace aotgrad
