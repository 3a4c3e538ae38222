// The typed element pointer a kernel works through once visit_dtype has picked T.
#pragma once

#include "aotgrad/tensor.h"

namespace aotgrad::kernels {

// `t`'s first element (storage offset applied) as T*. Unchecked: T must be `t`'s storage type
// and `t` must hold real data (a fake tensor has none).
template <typename T>
T* data_of(const Tensor& t) {
  return reinterpret_cast<T*>(t.impl()->data_bytes());
}

}  // namespace aotgrad::kernels
