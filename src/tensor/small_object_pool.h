// Small blocks (the shared_ptr control blocks of TensorImpl, Storage, OpNode, AccumulateGrad and
// CompiledBackward, and AutogradMeta) and whole TensorImpls recycled per thread.
//
// Reading guide: pool_allocate(n) pops a block of n's size class (32-byte steps up to
// kMaxPooled) from this thread's free list, or asks operator new; pool_deallocate(p, n) pushes it
// onto this thread's list, or hands it back to operator delete once the list holds kMaxBlocks.
// Why: a compiled call makes and drops a few tensors, and with glibc's defaults a burst of more
// than seven frees of one size leaves its per-thread cache for the shared bins, which take
// atomic operations; measured on the per-call fw+bw of a tiny graph (build/aot_bench calls cpp),
// malloc and free were a fifth of the call (docs/performance.md, twenty-second pass).
//
// A block may be freed on another thread than the one that took it: it joins that thread's
// list (all blocks come from operator new, so any list may hold any block). A thread's lists are
// handed back to operator delete when it exits; a block freed after that (a static tensor
// destroyed at exit) goes straight to operator delete.
//
// Under AddressSanitizer a block waiting on a list is poisoned, so a use after free is still
// reported, as the CPU allocator does for its cached blocks (allocator.h).
//
// Thread-safety: every function may be called from any thread; each thread has its own lists.
#pragma once

#include <cstddef>
#include <memory>
#include <new>

namespace aotgrad {

struct TensorImpl;

namespace pool_detail {
inline constexpr size_t kStep = 32;
inline constexpr size_t kMaxPooled = 512;
inline constexpr size_t kMaxBlocks = 128;     // per size class and thread: at most 544 KiB held
inline constexpr size_t kMaxSpareImpls = 64;  // per thread
inline constexpr size_t kMaxKeptDims = 16;    // a spare's vectors keep at most this capacity
}  // namespace pool_detail

// A block of at least `nbytes` bytes, aligned as operator new aligns; throws std::bad_alloc.
// Above kMaxPooled bytes it is operator new's block, and pool_deallocate hands it straight back.
void* pool_allocate(size_t nbytes);
// `nbytes` must be what was passed to pool_allocate() for `p`.
void pool_deallocate(void* p, size_t nbytes) noexcept;

// A std allocator over the pool, for std::allocate_shared.
template <typename T>
struct PoolAllocator {
  using value_type = T;
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

  PoolAllocator() = default;
  template <typename U>
  PoolAllocator(const PoolAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > static_cast<size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(pool_allocate(n * sizeof(T)));
  }
  void deallocate(T* p, size_t n) noexcept { pool_deallocate(p, n * sizeof(T)); }
  template <typename U>
  bool operator==(const PoolAllocator<U>&) const noexcept {
    return true;
  }
};

// A default TensorImpl whose sizes and strides may keep the capacity of a tensor that died on
// this thread: the TensorImpls of a call's tensors are reused whole, so filling in a shape of a
// few dims allocates nothing. Its control block comes from the pool. The last reference resets
// it (every member destroyed and default-made again, the two vectors emptied) and keeps it for
// the next call on the thread that dropped it, up to kMaxSpareImpls; beyond that it is deleted.
std::shared_ptr<TensorImpl> new_tensor_impl();

}  // namespace aotgrad
