// The kernels of vec/copy.h, compiled once per Highway target (hwy/foreach_target.h re-includes
// this file with HWY_TARGET set to each ISA in turn).
//
// Reading guide: Transpose() walks tiles of kTileRows x kTileCols destination elements; inside a
// tile,
// TransposeBlock() moves N x N elements through registers, N = the vector's lane count, with
// log2(N) rounds of ConcatEven / ConcatOdd (each round sends bit 0 of the lane index to the top
// of the row index; after log2(N) rounds rows and lanes have traded places). Edges narrower than
// N go element by element. The HWY_ONCE part at the end is compiled once and picks the target.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vec/copy.cpp"
#include "kernels/vec/copy.h"

#include <hwy/cache_control.h>
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

HWY_BEFORE_NAMESPACE();
namespace aotgrad::kernels::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Transpose tiles: kTileRows destination rows x kTileCols destination columns. Measured on a
// 1024 x 1024 f32 transpose (bench/copy_bench.cpp): taller tiles keep more source lines in flight
// per destination line written; beyond 128 x 64 nothing changed.
constexpr int64_t kTileRows = 128, kTileCols = 64;

template <typename T>
void Rows(char* dst_bytes, int64_t ds, const char* src_bytes, int64_t ss, int64_t rows,
          int64_t cols) {
  T* dst = reinterpret_cast<T*>(dst_bytes);
  const T* src = reinterpret_cast<const T*>(src_bytes);
  const hn::ScalableTag<T> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t r = 0; r < rows; ++r) {
    T* out = dst + r * ds;
    const T* in = src + r * ss;
    int64_t c = 0;
    for (; c + 4 * lanes <= cols; c += 4 * lanes) {
      const auto v0 = hn::LoadU(d, in + c), v1 = hn::LoadU(d, in + c + lanes);
      const auto v2 = hn::LoadU(d, in + c + 2 * lanes), v3 = hn::LoadU(d, in + c + 3 * lanes);
      hn::StoreU(v0, d, out + c);
      hn::StoreU(v1, d, out + c + lanes);
      hn::StoreU(v2, d, out + c + 2 * lanes);
      hn::StoreU(v3, d, out + c + 3 * lanes);
    }
    for (; c + lanes <= cols; c += lanes) hn::StoreU(hn::LoadU(d, in + c), d, out + c);
    if (c < cols) std::memcpy(out + c, in + c, static_cast<size_t>(cols - c) * sizeof(T));
  }
}

template <typename T>
void Broadcast(char* dst_bytes, int64_t ds, const char* src_bytes, int64_t ss, int64_t rows,
               int64_t cols) {
  T* dst = reinterpret_cast<T*>(dst_bytes);
  const T* src = reinterpret_cast<const T*>(src_bytes);
  const hn::ScalableTag<T> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t r = 0; r < rows; ++r) {
    T* out = dst + r * ds;
    const T value = src[r * ss];
    const auto v = hn::Set(d, value);
    int64_t c = 0;
    for (; c + lanes <= cols; c += lanes) hn::StoreU(v, d, out + c);
    for (; c < cols; ++c) out[c] = value;
  }
}

#if HWY_TARGET != HWY_SCALAR
// dst[r * ds + c] = src[c * ss + r] for r, c < N: src rows c are loaded as vectors over r. The
// loops are unrolled by hand (pragmas): left as loops, GCC keeps v[] in memory, 4x slower.
// kStream writes with non-temporal stores (dst rows must be aligned to the vector).
template <bool kStream, class D, typename T>
HWY_INLINE void TransposeBlock(D d, T* dst, int64_t ds, const T* src, int64_t ss) {
  constexpr size_t N = hn::MaxLanes(D());
  using V = hn::Vec<D>;
  V v[N];
#pragma GCC unroll 16
  for (size_t i = 0; i < N; ++i) v[i] = hn::LoadU(d, src + static_cast<int64_t>(i) * ss);
#pragma GCC unroll 4
  for (size_t round = 1; round < N; round *= 2) {
    V t[N];
#pragma GCC unroll 16
    for (size_t i = 0; i < N / 2; ++i) {
      t[i] = hn::ConcatEven(d, v[2 * i + 1], v[2 * i]);
      t[i + N / 2] = hn::ConcatOdd(d, v[2 * i + 1], v[2 * i]);
    }
#pragma GCC unroll 16
    for (size_t i = 0; i < N; ++i) v[i] = t[i];
  }
#pragma GCC unroll 16
  for (size_t i = 0; i < N; ++i) {
    if constexpr (kStream)
      hn::Stream(v[i], d, dst + static_cast<int64_t>(i) * ds);
    else
      hn::StoreU(v[i], d, dst + static_cast<int64_t>(i) * ds);
  }
}
#endif

template <typename T>
void TransposeScalar(T* dst, int64_t ds, const T* src, int64_t ss, int64_t r0, int64_t r1,
                     int64_t c0, int64_t c1) {
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t c = c0; c < c1; ++c) dst[r * ds + c] = src[c * ss + r];
}

// Whether the register blocks of a transpose into dst may use non-temporal stores: each store
// must fill whole cache lines (a partial line would be written to memory piecemeal) at an
// address aligned to the vector, on every destination row.
template <class D, typename T>
bool CanStream(D d, const T* dst, int64_t ds) {
  const size_t bytes = hn::Lanes(d) * sizeof(T);
  const size_t line = 64;
  return bytes % line == 0 && reinterpret_cast<uintptr_t>(dst) % bytes == 0 &&
         static_cast<size_t>(ds) * sizeof(T) % bytes == 0;
}

// kStream: the caller's destination is larger than the core's L2, so the result cannot stay
// in cache for its reader; streaming stores write it without first reading each line (the
// read-for-ownership a plain store needs costs a third of the memory traffic).
template <typename T, bool kStream>
void Transpose(char* dst_bytes, int64_t ds, const char* src_bytes, int64_t ss, int64_t rows,
               int64_t cols) {
  T* dst = reinterpret_cast<T*>(dst_bytes);
  const T* src = reinterpret_cast<const T*>(src_bytes);
#if HWY_TARGET != HWY_SCALAR
  const hn::ScalableTag<T> d;
  const bool stream = kStream && CanStream(d, dst, ds);
#endif
  for (int64_t r0 = 0; r0 < rows; r0 += kTileRows) {
    const int64_t r1 = std::min(rows, r0 + kTileRows);
    for (int64_t c0 = 0; c0 < cols; c0 += kTileCols) {
      const int64_t c1 = std::min(cols, c0 + kTileCols);
      int64_t rv = r0, cv = c0;  // [r0, rv) x [c0, cv) goes through registers
#if HWY_TARGET != HWY_SCALAR
      // Register transposes need full vectors whose lanes ConcatEven / ConcatOdd permute: 4- and
      // 8-byte lanes keep N <= 16 vectors live; narrower ones would spill, so they go scalar.
      if constexpr (sizeof(T) >= 4) {
        const int64_t n = static_cast<int64_t>(hn::Lanes(d));
        rv = r0 + (r1 - r0) / n * n;
        cv = c0 + (c1 - c0) / n * n;
        for (int64_t r = r0; r < rv; r += n)
          for (int64_t c = c0; c < cv; c += n) {
            if (stream)
              TransposeBlock<true>(d, dst + r * ds + c, ds, src + c * ss + r, ss);
            else
              TransposeBlock<false>(d, dst + r * ds + c, ds, src + c * ss + r, ss);
          }
      }
#endif
      TransposeScalar(dst, ds, src, ss, r0, rv, cv, c1);
      TransposeScalar(dst, ds, src, ss, rv, r1, c0, c1);
    }
  }
#if HWY_TARGET != HWY_SCALAR
  // Streamed lines must reach memory before another thread reads them.
  if (stream) hwy::FlushStream();
#endif
}

const CopyTarget* GetCopyTarget() {
  static const CopyTarget target{
      hwy::TargetName(HWY_TARGET),
      {&Rows<uint8_t>, &Rows<uint16_t>, &Rows<uint32_t>, &Rows<uint64_t>},
      {&Broadcast<uint8_t>, &Broadcast<uint16_t>, &Broadcast<uint32_t>, &Broadcast<uint64_t>},
      {&Transpose<uint8_t, false>, &Transpose<uint16_t, false>, &Transpose<uint32_t, false>,
       &Transpose<uint64_t, false>},
      {&Transpose<uint8_t, true>, &Transpose<uint16_t, true>, &Transpose<uint32_t, true>,
       &Transpose<uint64_t, true>}};
  return &target;
}

}  // namespace aotgrad::kernels::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace aotgrad::kernels::vec {

HWY_EXPORT(GetCopyTarget);

const CopyTarget& copy_target() {
  static const CopyTarget* const target = HWY_DYNAMIC_DISPATCH(GetCopyTarget)();
  return *target;
}

int64_t stream_transpose_bytes() {
  static const int64_t bytes = [] {
    const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return l2 > 0 ? static_cast<int64_t>(l2) : int64_t{1} << 20;
  }();
  return bytes;
}

std::span<const CopyTarget* const> copy_targets() {
  struct Compiled {
    int64_t bit;
    const CopyTarget* (*get)();
  };
  // Best first, as Highway orders its targets.
  static const Compiled kCompiled[] = {
#if HWY_TARGETS & HWY_AVX3_DL
    {HWY_AVX3_DL, &N_AVX3_DL::GetCopyTarget},
#endif
#if HWY_TARGETS & HWY_AVX3
    {HWY_AVX3, &N_AVX3::GetCopyTarget},
#endif
#if HWY_TARGETS & HWY_AVX2
    {HWY_AVX2, &N_AVX2::GetCopyTarget},
#endif
#if HWY_TARGETS & HWY_SSE4
    {HWY_SSE4, &N_SSE4::GetCopyTarget},
#endif
#if HWY_TARGETS & HWY_SSSE3
    {HWY_SSSE3, &N_SSSE3::GetCopyTarget},
#endif
#if HWY_TARGETS & HWY_EMU128
    {HWY_EMU128, &N_EMU128::GetCopyTarget},
#endif
#if HWY_TARGETS & HWY_SCALAR
    {HWY_SCALAR, &N_SCALAR::GetCopyTarget},
#endif
  };
  static const std::vector<const CopyTarget*> list = [] {
    std::vector<const CopyTarget*> v;
    const int64_t cpu = hwy::SupportedTargets() | HWY_EMU128 | HWY_SCALAR;
    for (const Compiled& c : kCompiled)
      if (cpu & c.bit) v.push_back(c.get());
    return v;
  }();
  return list;
}

}  // namespace aotgrad::kernels::vec
#endif  // HWY_ONCE
