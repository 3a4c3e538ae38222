// Strided copy, fill and accumulate.
//
// Reading guide: every copy is planned first (plan_copy): the destination's dims are ordered
// outer to inner by its strides, size-1 dims dropped and neighbours that are one run in both
// operands merged, so a contiguous copy becomes a single row and a transpose two dims. The
// innermost dim (`col`) and one more (`row`) form a 2-D slab; the kind of slab picks a kernel
// of vec/copy.h (rows: both unit stride; broadcast: source stride 0; transpose: the source's
// unit-stride dim is `row`) or, for the rest, a strided loop here. The remaining dims (`outer`)
// and blocks of slab rows are the units that OpenMP threads share when the copy is large.
// dtype conversion and gradient accumulation walk the same plan with their own inner loop.
#include "kernels/copy.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "kernels/parallel.h"
#include "kernels/vec/copy.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::kernels {
namespace {

// Elements moved below which one thread does the whole copy: a fork costs about as much as
// copying 128 KB.
constexpr int64_t kParallelElements = 32768;
// Slab rows per unit of parallel work: one transpose tile's height (vec/copy.cpp).
constexpr int64_t kRowBlock = 128;

void check_broadcastable(const Tensor& dst, const Tensor& src, const char* what) {
  if (src.dim() > dst.dim() || broadcast_shapes(dst.sizes(), src.sizes()) != dst.sizes())
    throw std::invalid_argument(
        std::string(what) + ": source of shape " + shape_to_string(src.sizes()) +
        " does not broadcast to destination shape " + shape_to_string(dst.sizes()));
}

struct Dim {
  int64_t size = 1, dst = 0, src = 0;  // strides in elements
};

enum class Slab { rows, broadcast, transpose, strided };

struct CopyPlan {
  std::vector<Dim> outer;  // outer to inner
  Dim row, col;            // the 2-D slab: col innermost in the destination
  Slab kind = Slab::strided;
  int64_t outer_count = 1;
};

// Orders dst's dims by decreasing stride (ties: by the source's), drops size-1 dims, merges
// neighbours that form one run in both operands, then picks the slab.
CopyPlan plan_copy(const IntList& sizes, const IntList& dst_strides, const IntList& src_strides) {
  std::vector<Dim> dims;
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] != 1) dims.push_back({sizes[d], dst_strides[d], src_strides[d]});
  std::stable_sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) {
    return a.dst != b.dst ? a.dst > b.dst : a.src > b.src;
  });
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (!merged.empty() && merged.back().dst == d.dst * d.size &&
        merged.back().src == d.src * d.size)
      merged.back() = {merged.back().size * d.size, d.dst, d.src};
    else
      merged.push_back(d);
  }
  CopyPlan p;
  if (merged.empty()) merged.push_back({1, 1, 1});
  p.col = merged.back();
  merged.pop_back();
  p.kind = p.col.dst != 1   ? Slab::strided
           : p.col.src == 1 ? Slab::rows
           : p.col.src == 0 ? Slab::broadcast
                            : Slab::strided;
  // A source that is contiguous along another dim: transpose that dim with col.
  if (p.kind == Slab::strided && p.col.dst == 1) {
    for (size_t i = merged.size(); i-- > 0;) {
      if (merged[i].src == 1) {
        p.row = merged[i];
        merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(i));
        p.kind = Slab::transpose;
        break;
      }
    }
  }
  if (p.kind != Slab::transpose && !merged.empty()) {
    p.row = merged.back();
    merged.pop_back();
  }
  p.outer = std::move(merged);
  for (const Dim& d : p.outer) p.outer_count *= d.size;
  // One long run (a contiguous copy or a fill): cut it into rows, so that threads can share it.
  if (p.outer.empty() && p.row.size == 1 && p.col.size > kParallelElements) {
    for (int64_t chunk = 4096; chunk >= 256; chunk /= 2) {
      if (p.col.size % chunk != 0) continue;
      p.row = {p.col.size / chunk, chunk * p.col.dst, chunk * p.col.src};
      p.col.size = chunk;
      break;
    }
  }
  return p;
}

// Calls f(dst_offset, src_offset, rows) for the slabs' row blocks, in parallel when the copy is
// large. Offsets in elements, at the block's first row.
template <typename F>
void for_each_block(const CopyPlan& p, F&& f) {
  const int64_t blocks_per_slab = (p.row.size + kRowBlock - 1) / kRowBlock;
  const int64_t units = p.outer_count * blocks_per_slab;
  const int64_t elements = p.outer_count * p.row.size * p.col.size;
#pragma omp parallel for schedule(static) if (elements > kParallelElements && units > 1)
  for (int64_t u = 0; u < units; ++u) {
    int64_t o = u / blocks_per_slab, dst_off = 0, src_off = 0;
    for (size_t i = p.outer.size(); i-- > 0;) {
      const int64_t idx = o % p.outer[i].size;
      o /= p.outer[i].size;
      dst_off += idx * p.outer[i].dst;
      src_off += idx * p.outer[i].src;
    }
    const int64_t r0 = (u % blocks_per_slab) * kRowBlock;
    f(dst_off + r0 * p.row.dst, src_off + r0 * p.row.src, std::min(kRowBlock, p.row.size - r0));
  }
}

int log2_itemsize(DType dtype) {
  switch (itemsize(dtype)) {
    case 1:
      return 0;
    case 2:
      return 1;
    case 4:
      return 2;
    default:
      return 3;
  }
}

// Whether the bytes `a` reaches and those `b` reaches can overlap (both non-empty; strides are
// never negative).
bool may_overlap(const Tensor& a, const Tensor& b) {
  auto span = [](const Tensor& t) {
    int64_t last = 0;
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
    const char* begin = t.impl()->data_bytes();
    return std::pair{begin, begin + (last + 1) * static_cast<int64_t>(itemsize(t.dtype()))};
  };
  const auto [a0, a1] = span(a);
  const auto [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
}

template <typename T>
void strided_block(char* dst_bytes, const char* src_bytes, const CopyPlan& p, int64_t rows) {
  T* dst = reinterpret_cast<T*>(dst_bytes);
  const T* src = reinterpret_cast<const T*>(src_bytes);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < p.col.size; ++c)
      dst[r * p.row.dst + c * p.col.dst] = src[r * p.row.src + c * p.col.src];
}

// Same dtype, no overlap: the slab kernels move raw elements.
void copy_same_dtype(const Tensor& dst, const Tensor& src, const IntList& src_strides) {
  const CopyPlan p = plan_copy(dst.sizes(), dst.strides(), src_strides);
  const int size_log2 = log2_itemsize(dst.dtype());
  const int64_t esize = int64_t{1} << size_log2;
  char* d = dst.impl()->data_bytes();
  const char* s = src.impl()->data_bytes();
  const vec::CopyTarget& k = vec::copy_target();
  const bool stream = dst.numel() * esize >= vec::stream_transpose_bytes();
  for_each_block(p, [&](int64_t dst_off, int64_t src_off, int64_t rows) {
    char* out = d + dst_off * esize;
    const char* in = s + src_off * esize;
    switch (p.kind) {
      case Slab::rows:
        return k.rows[size_log2](out, p.row.dst, in, p.row.src, rows, p.col.size);
      case Slab::broadcast:
        return k.broadcast[size_log2](out, p.row.dst, in, p.row.src, rows, p.col.size);
      case Slab::transpose:
        return (stream ? k.transpose_stream : k.transpose)[size_log2](out, p.row.dst, in, p.col.src,
                                                                      rows, p.col.size);
      case Slab::strided:
        switch (size_log2) {
          case 0:
            return strided_block<uint8_t>(out, in, p, rows);
          case 1:
            return strided_block<uint16_t>(out, in, p, rows);
          case 2:
            return strided_block<uint32_t>(out, in, p, rows);
          default:
            return strided_block<uint64_t>(out, in, p, rows);
        }
    }
  });
}

// Calls f(dst, src, len) on typed pointers for every run of elements that is contiguous in both
// operands (a slab row when col has unit strides, else single elements): the loops of dtype
// conversion and accumulation, which the compiler vectorizes on contiguous runs.
template <typename D, typename S, typename F>
void walk_runs(const Tensor& dst, const Tensor& src, const IntList& src_strides, F&& f) {
  const CopyPlan p = plan_copy(dst.sizes(), dst.strides(), src_strides);
  D* d = reinterpret_cast<D*>(dst.impl()->data_bytes());
  const S* s = reinterpret_cast<const S*>(src.impl()->data_bytes());
  const bool unit = p.col.dst == 1 && p.col.src == 1;
  for_each_block(p, [&](int64_t dst_off, int64_t src_off, int64_t rows) {
    for (int64_t r = 0; r < rows; ++r) {
      D* out = d + dst_off + r * p.row.dst;
      const S* in = s + src_off + r * p.row.src;
      if (unit) {
        f(out, in, p.col.size);
      } else {
        for (int64_t c = 0; c < p.col.size; ++c) f(out + c * p.col.dst, in + c * p.col.src, 1);
      }
    }
  });
}

}  // namespace

void copy_into(const Tensor& dst, const Tensor& src) {
  check_broadcastable(dst, src, "copy_");
  if (dst.numel() == 0) return;
  if (may_overlap(dst, src)) {
    // Read the whole source before writing any of it.
    copy_into(dst, contiguous_copy(src, src.dtype()));
    return;
  }
  const IntList src_strides = broadcast_strides(src, dst.sizes());
  if (dst.dtype() == src.dtype()) return copy_same_dtype(dst, src, src_strides);
  visit_dtype(dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      walk_runs<D, S>(dst, src, src_strides, [](D* out, const S* in, int64_t len) {
        for (int64_t i = 0; i < len; ++i) out[i] = convert<D>(in[i]);
      });
    });
  });
}

void add_into(const Tensor& dst, const Tensor& src) {
  check_broadcastable(dst, src, "gradient accumulation");
  if (dst.numel() == 0) return;
  if (may_overlap(dst, src)) {
    add_into(dst, contiguous_copy(src, src.dtype()));
    return;
  }
  const IntList src_strides = broadcast_strides(src, dst.sizes());
  visit_dtype(dst.dtype(), [&](auto dtag) {
    using D = typename decltype(dtag)::type;
    visit_dtype(src.dtype(), [&](auto stag) {
      using S = typename decltype(stag)::type;
      walk_runs<D, S>(dst, src, src_strides, [](D* out, const S* in, int64_t len) {
        if constexpr (std::is_same_v<D, bool>) {
          for (int64_t i = 0; i < len; ++i) out[i] = out[i] || convert<bool>(in[i]);
        } else if constexpr (std::is_same_v<D, S> &&
                             (std::is_same_v<D, float> || std::is_same_v<D, double>)) {
          // Same result as summing in double and rounding: double rounding is exact for a sum of
          // floats (53 >= 2 * 24 + 2 significand bits).
          for (int64_t i = 0; i < len; ++i) out[i] += in[i];
        } else {
          for (int64_t i = 0; i < len; ++i)
            out[i] = convert<D>(convert<double>(out[i]) + convert<double>(in[i]));
        }
      });
    });
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
