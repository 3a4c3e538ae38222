// Two-dimensional copy kernels on raw elements, compiled for several x86 ISAs and picked at run
// time: the inner loops of kernels::copy_into (kernels/copy.cpp), which reduces every strided
// copy to calls of these on 2-D slabs.
//
// Each kernel works on elements of 1, 2, 4 or 8 bytes (the table is indexed by log2 of the size)
// and takes strides in elements. Ranges must not overlap. copy_target() is the best compiled
// target this CPU runs, picked once; copy_targets() lists every compiled target it runs, best
// first, so tests can check that each gives the same bytes.
//
// Thread-safety: the kernels are pure functions of their arguments; both lookups are
// initialized once, thread-safely.
#pragma once

#include <cstdint>
#include <span>

namespace aotgrad::kernels::vec {

// rows x cols elements; strides in elements.
using Copy2d = void (*)(char* dst, int64_t dst_stride, const char* src, int64_t src_stride,
                        int64_t rows, int64_t cols);

struct CopyTarget {
  const char* name;
  Copy2d rows[4];       // dst[r * ds + c] = src[r * ss + c]
  Copy2d broadcast[4];  // dst[r * ds + c] = src[r * ss]
  // dst[r * ds + c] = src[c * ss + r]: a transpose, tiled so that both sides are read and
  // written a cache line at a time; 4- and 8-byte elements go through register transposes.
  Copy2d transpose[4];
  // The same transpose with non-temporal stores where the destination rows allow them (whole,
  // aligned cache lines): for a destination larger than the core's L2 (stream_transpose_bytes),
  // which could not stay in cache for its reader anyway.
  Copy2d transpose_stream[4];
};

// Destination bytes from which kernels::copy_into takes transpose_stream: the core's L2 size
// (sysconf), 1 MiB where the system does not say.
int64_t stream_transpose_bytes();

const CopyTarget& copy_target();
std::span<const CopyTarget* const> copy_targets();

}  // namespace aotgrad::kernels::vec
