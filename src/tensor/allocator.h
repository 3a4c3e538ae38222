// The CPU allocator behind Storage: 64-byte aligned blocks, cached by size class.
//
// Reading guide: a request of n bytes is served by a block of size_class(n) bytes (64 bytes at
// least; powers of two up to 1 MiB; whole MiB above). A freed block goes onto the free list of its
// class instead of back to the C library, and the next request of that class pops it. Why: glibc
// hands blocks above its mmap threshold back to the kernel on free(), so every training step would
// fault its activations in again, page by page (PyTorch with glibc defaults: 7,000+ faults and 2x
// the time per MLP step). Power-of-two classes keep the number of lists small and make a block
// reusable by every request up to twice smaller; above 1 MiB that waste would be too costly, so
// large classes grow by 1 MiB.
//
// The caller passes the size back on deallocate (Storage knows its nbytes), so blocks carry no
// header. If the system refuses an allocation, the cache is emptied and the allocation retried
// once before OutOfMemoryError, which names the op running on this thread (tensor/current_op.h)
// and the bytes. Nothing here throws on the way back: deallocate() is noexcept, because Storage
// calls it from its destructor.
//
// Under AddressSanitizer the cache stays on (so sanitizer runs test the code that ships), but a
// cached block is poisoned while it waits on a free list, and a reused block keeps the bytes past
// the request poisoned: a use after free, or an overrun into the slack of the size class, is
// reported as before. What ASan can no longer name is the original free's stack.
//
// Thread-safety: every member function may be called from any thread (one lock, a SpinLock: the
// critical sections are a list push or pop and a few counters, and a compiled call of a small
// graph takes it ten times; pthread's mutex cost two atomic operations and ~65 instructions a
// pair there, this one atomic exchange and a store).
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "aotgrad/memory.h"

namespace aotgrad {

// A lock for short critical sections: taking it is one atomic exchange, releasing it a store. A
// waiter spins a little, then yields its core, so a holder that is descheduled (or empties the
// whole cache) does not make the others burn theirs.
class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire))
      for (int spins = 0; locked_.load(std::memory_order_relaxed); ++spins) {
        if (spins < 64)
          relax();
        else
          std::this_thread::yield();
      }
  }
  bool try_lock() noexcept {
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  static void relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::atomic<bool> locked_{false};
};

class CpuAllocator {
 public:
  static constexpr size_t kAlignment = 64;
  static constexpr size_t kLargeStep = size_t{1} << 20;
  // Requests above this fail with OutOfMemoryError before any rounding could overflow (no
  // machine has 64 PiB; the C library would refuse them anyway).
  static constexpr size_t kMaxRequest = size_t{1} << 56;

  explicit CpuAllocator(bool caching) : caching_(caching) {}
  ~CpuAllocator();
  CpuAllocator(const CpuAllocator&) = delete;
  CpuAllocator& operator=(const CpuAllocator&) = delete;

  // nullptr for 0 bytes; otherwise a kAlignment-aligned block of at least `nbytes`. Throws
  // OutOfMemoryError when the system refuses it.
  void* allocate(size_t nbytes);
  // `nbytes` must be what was passed to allocate() for `ptr`. nullptr is ignored.
  void deallocate(void* ptr, size_t nbytes) noexcept;

  void empty_cache();
  MemoryStats stats() const;
  void reset_peak();
  bool caching() const { return caching_; }

  static size_t size_class(size_t nbytes);

 private:
  void release_all_locked();
  // The free list of size class `cls` (called with the lock held). The power-of-two classes
  // have a slot each, so the per-call path hashes nothing; the MiB classes live in a map.
  std::vector<void*>& free_list_locked(size_t cls) {
    if (cls <= kLargeStep) return small_lists_[std::countr_zero(cls) - kSmallShift];
    return free_lists_[cls];
  }

  static constexpr int kSmallShift = std::countr_zero(kAlignment);
  const bool caching_;
  mutable SpinLock lock_;
  std::array<std::vector<void*>, std::countr_zero(kLargeStep) - kSmallShift + 1> small_lists_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;  // MiB size class -> cached blocks
  MemoryStats stats_;
};

// What AOTGRAD_ALLOCATOR asks for. An unknown value is no reason to stop a program that only
// wanted a tuning knob: it gets the default (caching) and a one-line warning that names the
// variable, the value (escaped) and the accepted values, as PyTorch warns about unknown
// allocator settings.
struct AllocatorSetting {
  bool caching = true;
  std::string warning;  // empty when the value was understood
};
AllocatorSetting parse_allocator_setting(const char* value);

// The process-wide allocator used by Storage. Caching unless AOTGRAD_ALLOCATOR=system. It is
// never destroyed, so storages freed by static destructors at exit still find it.
CpuAllocator& cpu_allocator();

// "68719476736 bytes (64.0 GiB)": a byte count for a message, exact and readable.
std::string describe_bytes(size_t nbytes);
// "out of memory: <op> asked for <bytes><what>; free memory or use smaller shapes".
std::string out_of_memory_message(std::string_view op, size_t nbytes, std::string_view what);

}  // namespace aotgrad
