// Overflow-checked arithmetic on sizes, strides and byte counts.
//
// Every element count, stride, storage extent and byte size in aotgrad is an int64 computed from
// user-given sizes, and a wrapped product silently turns a huge request into a tiny (or negative)
// one: ones([2^31, 2^31]) of f32 asked the allocator for 2^64 mod 2^64 = 0 bytes and wrote
// through it. These helpers say "overflows" (nullopt) instead of wrapping, so a caller can raise an
// error naming its op and shape. They never throw; the errors are built by the callers that know
// the op (tensor.cpp's check_shape / check_view_geometry, the meta functions).
//
// The partitioner's byte totals are estimates, not addresses: they saturate instead
// (saturating_add / saturating_mul) and the report says so.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>

namespace aotgrad {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// The product of `sizes` (all >= 0), or nullopt when it overflows int64. A zero anywhere makes
// the product 0 even when the other sizes alone would overflow, as the tensor really is empty.
inline std::optional<int64_t> checked_numel(std::span<const int64_t> sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    if (s == 0) return 0;
    if (!overflow && __builtin_mul_overflow(n, s, &n)) overflow = true;
  }
  if (overflow) return std::nullopt;
  return n;
}

// Element offsets a strided view can reach: every index of (sizes, strides) from `offset`.
// `lo` and `hi` are the smallest and largest reachable offsets (negative strides lower `lo`).
// Meaningless for an empty view (a zero size), which reaches nothing: `empty` is set then.
struct ReachableOffsets {
  int64_t lo = 0, hi = 0;
  bool empty = false;
};

// nullopt when an offset the view reaches (or a partial sum on the way) overflows int64. Sizes
// must be >= 0 and as many as strides.
inline std::optional<ReachableOffsets> checked_reachable_offsets(std::span<const int64_t> sizes,
                                                                 std::span<const int64_t> strides,
                                                                 int64_t offset) {
  ReachableOffsets r{offset, offset, false};
  for (size_t d = 0; d < sizes.size(); ++d)
    if (sizes[d] == 0) return ReachableOffsets{offset, offset, true};
  for (size_t d = 0; d < sizes.size(); ++d) {
    int64_t span;
    if (__builtin_mul_overflow(sizes[d] - 1, strides[d], &span)) return std::nullopt;
    int64_t& end = span >= 0 ? r.hi : r.lo;
    if (__builtin_add_overflow(end, span, &end)) return std::nullopt;
  }
  return r;
}

// a + b and a x b, clamped at SIZE_MAX instead of wrapping.
inline size_t saturating_add(size_t a, size_t b) {
  size_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<size_t>::max() : r;
}
inline size_t saturating_mul(size_t a, size_t b) {
  size_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<size_t>::max() : r;
}

// a x b clamped into int64's range: for strides a meta function computes for a dim they never
// step along (a size-1 dim), where the exact value does not matter but a signed wrap is UB.
inline int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min()
                            : std::numeric_limits<int64_t>::max();
}

// The product of non-negative `factors`, clamped at INT64_MAX: for work estimates (multiply-add
// counts that pick a thread count), which may exceed int64 but must not wrap to a small number.
inline int64_t saturating_product(std::initializer_list<int64_t> factors) {
  int64_t r = 1;
  for (int64_t f : factors) {
    if (f == 0) return 0;
    r = saturating_mul(r, f);
  }
  return r;
}

}  // namespace aotgrad
