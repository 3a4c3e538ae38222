#include "kernels/elementwise.h"

namespace aotgrad::kernels::elementwise {

Strided coalesce(const Tensor& t, const IntList& out_sizes) {
  Strided s;
  s.data = t.impl()->data_bytes();
  s.dtype = t.dtype();
  IntList strides = broadcast_strides(t, out_sizes);
  bool all_zero = true;
  for (size_t d = 0; d < out_sizes.size(); ++d) {
    if (out_sizes[d] == 1) continue;
    all_zero = all_zero && strides[d] == 0;
    // Walking d right after the previous kept dim is one longer run when the outer stride spans
    // exactly this dim (stride-0 broadcast dims merge with each other the same way).
    if (!s.sizes.empty() && s.strides.back() == strides[d] * out_sizes[d]) {
      s.sizes.back() *= out_sizes[d];
      s.strides.back() = strides[d];
    } else {
      s.sizes.push_back(out_sizes[d]);
      s.strides.push_back(strides[d]);
    }
  }
  if (all_zero) {
    // One value read for every output element: the engine reads it once.
    s.sizes.clear();
    s.strides.clear();
  }
  return s;
}

}  // namespace aotgrad::kernels::elementwise
