#include "kernels/copy.h"

#include <cstring>
#include <stdexcept>

#include "tensor/dtype_dispatch.h"
#include "kernels/parallel.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

void check_broadcastable(const Tensor& dst, const Tensor& src, const char* what) {
  if (src.dim() > dst.dim() || broadcast_shapes(dst.sizes(), src.sizes()) != dst.sizes())
    throw std::invalid_argument(std::string(what) + ": source of shape " +
                                shape_to_string(src.sizes()) +
                                " does not broadcast to destination shape " +
                                shape_to_string(dst.sizes()));
}

// Calls f(dst_elem&, src_elem) for every element, src broadcast; parallel over chunks.
template <typename F>
void binary_walk(const Tensor& dst, const Tensor& src, F&& f) {
  const IntList& sizes = dst.sizes();
  IntList src_strides = broadcast_strides(src, sizes);
  int64_t n = dst.numel();
  visit_dtype(dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      D* d = reinterpret_cast<D*>(dst.impl()->data_bytes());
      const S* s = reinterpret_cast<const S*>(src.impl()->data_bytes());
      if constexpr (std::is_same_v<D, S>) {
        if (dst.is_contiguous() && src.is_contiguous() && src.sizes() == sizes) {
#pragma omp parallel for if (n > 32768)
          for (int64_t k = 0; k < n; ++k) f(d[k], s[k]);
          return;
        }
      }
      const IntList& dst_strides = dst.strides();
#pragma omp parallel if (n > 32768)
      {
        int nt = omp_get_num_threads_safe(), tid = omp_get_thread_num_safe();
        int64_t begin = part_begin(n, tid, nt), end = part_begin(n, tid + 1, nt);
        if (begin < end) {
          NdCounter<2> it(sizes, {&dst_strides, &src_strides}, {0, 0});
          it.seek(begin);
          for (int64_t k = begin; k < end; ++k, it.next()) f(d[it[0]], s[it[1]]);
        }
      }
    });
  });
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  check_broadcastable(dst, src, "copy_");
  binary_walk(dst, src, [](auto& d, auto s) { d = convert<std::remove_reference_t<decltype(d)>>(s); });
}

void add_into(const Tensor& dst, const Tensor& src) {
  check_broadcastable(dst, src, "gradient accumulation");
  binary_walk(dst, src, [](auto& d, auto s) {
    using D = std::remove_reference_t<decltype(d)>;
    if constexpr (std::is_same_v<D, bool>) d = d || convert<bool>(s);
    else d = convert<D>(static_cast<double>(convert<double>(d)) + convert<double>(s));
  });
}

void fill(const Tensor& dst, const Scalar& value) {
  Tensor v = scalar_tensor(value, dst.dtype());
  copy_into(dst, v);
}

Tensor contiguous_copy(const Tensor& a, DType dtype) {
  Tensor out = make_tensor(a.sizes(), dtype);
  copy_into(out, a);
  return out;
}

}  // namespace aotgrad::kernels
