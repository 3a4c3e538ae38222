#include "kernels/scatter.h"

#include <algorithm>
#include <stdexcept>

#include "kernels/copy.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {

bool is_non_overlapping(const IntList& sizes, const IntList& strides) {
  // Dims that can step (size > 1), innermost (smallest stride) first; each must jump past the
  // whole extent of the dims inside it.
  std::vector<size_t> dims;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] == 0) return true;  // no elements at all
    if (sizes[d] > 1) dims.push_back(d);
  }
  std::sort(dims.begin(), dims.end(), [&](size_t a, size_t b) { return strides[a] < strides[b]; });
  int64_t extent = 0;  // largest offset reachable by the dims visited so far
  for (size_t d : dims) {
    if (strides[d] <= extent) return false;
    extent += (sizes[d] - 1) * strides[d];
  }
  return true;
}

void scatter_window(const Tensor& out, const Tensor& src, const IntList& strides, int64_t offset) {
  if (!out.is_contiguous() || out.storage_offset() != 0)
    throw std::logic_error("scatter_window: destination must be fresh and contiguous");
  Tensor window = make_view(out, src.sizes(), strides, offset);
  if (is_non_overlapping(src.sizes(), strides)) {
    copy_into(window, src);
    return;
  }
  // Overlapping window: zero every reached element, then accumulate. Serial, because several
  // indices write the same element; this path only serves as_strided with overlapping outputs.
  const IntList& sizes = src.sizes();
  const IntList& src_strides = src.strides();
  const int64_t n = src.numel();
  visit_dtype(out.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      D* d = reinterpret_cast<D*>(out.impl()->data_bytes());
      const S* s = reinterpret_cast<const S*>(src.impl()->data_bytes());
      NdCounter<2> zero_it(sizes, {&strides, &src_strides}, {offset, 0});
      for (int64_t k = 0; k < n; ++k, zero_it.next()) d[zero_it[0]] = convert<D>(0.0);
      NdCounter<2> it(sizes, {&strides, &src_strides}, {offset, 0});
      for (int64_t k = 0; k < n; ++k, it.next()) {
        D& dst = d[it[0]];
        if constexpr (std::is_same_v<D, bool>)
          dst = dst || convert<bool>(s[it[1]]);
        else
          dst = convert<D>(convert<double>(dst) + convert<double>(s[it[1]]));
      }
    });
  });
}

}  // namespace aotgrad::kernels
