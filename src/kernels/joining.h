// Eager CPU kernel of the joining family (cat, stack): copying several tensors side by side.
#pragma once

#include <cstdint>
#include <span>

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// Writes `inputs` one after another along `dim` into `out`, a fresh contiguous tensor of the
// joined shape. Each input must match `out` on every other dim (the rows' meta functions check);
// inputs may have any strides and dtype (converted to out's). An input of shape [0] that does not
// have out's rank (PyTorch's legacy empty tensor) contributes nothing and is skipped.
void cat_into(const Tensor& out, std::span<const Tensor> inputs, int64_t dim);

}  // namespace aotgrad::kernels
