// Padding and roll as copies between windows: both ops move rectangular blocks of self into
// rectangular blocks of the output, so each is a few copy_into calls on views (make_view, no
// dispatch), and the strided copy kernel does the work.
#include "kernels/transform.h"

#include <algorithm>

#include "kernels/copy.h"
#include "kernels/factory.h"

namespace aotgrad::kernels {
namespace {

// The window of `t` that starts at `start` (per dim) with `sizes`.
Tensor window(const Tensor& t, const IntList& start, const IntList& sizes) {
  int64_t offset = t.storage_offset();
  for (size_t d = 0; d < start.size(); ++d) offset += start[d] * t.strides()[d];
  return make_view(t, sizes, t.strides(), offset);
}

bool empty(const IntList& sizes) {
  return std::any_of(sizes.begin(), sizes.end(), [](int64_t s) { return s == 0; });
}

}  // namespace

Tensor constant_pad(const Tensor& self, const IntList& pad, const Scalar& value,
                    const IntList& out_sizes) {
  Tensor out = full(out_sizes, value, self.dtype());
  const size_t ndim = self.sizes().size(), padded = pad.size() / 2;
  IntList in_start(ndim, 0), out_start(ndim, 0), len = self.sizes();
  for (size_t i = 0; i < padded; ++i) {
    const size_t d = ndim - 1 - i;
    const int64_t before = pad[2 * i], after = pad[2 * i + 1];
    in_start[d] = std::max<int64_t>(0, -before);
    out_start[d] = std::max<int64_t>(0, before);
    len[d] = std::max<int64_t>(0, self.sizes()[d] - in_start[d] - std::max<int64_t>(0, -after));
  }
  if (!empty(len)) copy_into(window(out, out_start, len), window(self, in_start, len));
  return out;
}

Tensor roll(const Tensor& self, const IntList& shifts, const IntList& dims) {
  Tensor out = make_tensor(self.sizes(), self.dtype());
  if (self.numel() == 0) return out;
  // Along each rolled dim the output is two blocks: [shift, n) <- [0, n - shift) and
  // [0, shift) <- [n - shift, n). With k rolled dims that is 2^k block copies.
  const size_t k = dims.size();
  for (uint64_t mask = 0; mask < (uint64_t{1} << k); ++mask) {
    IntList in_start(self.sizes().size(), 0), out_start(self.sizes().size(), 0), len = self.sizes();
    for (size_t i = 0; i < k; ++i) {
      const int64_t d = dims[i], n = self.sizes()[d], s = shifts[i];
      if (mask & (uint64_t{1} << i)) {
        in_start[d] = n - s;
        out_start[d] = 0;
        len[d] = s;
      } else {
        in_start[d] = 0;
        out_start[d] = s;
        len[d] = n - s;
      }
    }
    if (!empty(len)) copy_into(window(out, out_start, len), window(self, in_start, len));
  }
  return out;
}

}  // namespace aotgrad::kernels
