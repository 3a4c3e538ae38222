// Eager CPU kernels of the element-moving ops: constant padding (or cropping) and roll. Each
// returns a fresh contiguous tensor in self's dtype; self may have any strides. The rows' meta
// functions have checked the arguments; these kernels trust them.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// `pad` holds (before, after) pairs starting from the last dim; negative entries crop. Elements
// outside self are `value`. `out_sizes` is the padded shape.
Tensor constant_pad(const Tensor& self, const IntList& pad, const Scalar& value,
                    const IntList& out_sizes);

// Each dims[i] rotated by shifts[i] (already wrapped into [0, size)): out[j] = self[j - shift].
Tensor roll(const Tensor& self, const IntList& shifts, const IntList& dims);

}  // namespace aotgrad::kernels
