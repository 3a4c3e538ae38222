// The CPU memory behind tensors: statistics of the caching allocator and a way to release what it
// keeps.
//
// Every tensor's storage comes from one process-wide allocator. By default it caches: a freed block
// goes to a free list of its size class and the next allocation of that class reuses it, so a
// steady-state training step neither returns memory to the OS nor faults fresh pages in again.
// Setting the environment variable AOTGRAD_ALLOCATOR=system (read once, at the first allocation)
// turns caching off: every block then comes from and goes back to the C library. Any other value
// but `caching` (the default) prints one warning on stderr and keeps the caching allocator.
//
// An allocation the system refuses throws OutOfMemoryError, whose message names the op that asked,
// the bytes and, for a tensor, its dtype and shape:
//   out of memory: aten.mm.default asked for 68719476736 bytes (64.0 GiB) for an
//   f32[131072, 131072] output; free memory or use smaller shapes
//
//   aotgrad::MemoryStats s = aotgrad::memory_stats();
//   std::printf("%zu bytes in use, %zu cached\n", s.bytes_in_use, s.bytes_cached);
//   aotgrad::empty_cache();  // hand every cached block back to the system
//
// All functions are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace aotgrad {

// A tensor's memory could not be allocated (like PyTorch's torch.OutOfMemoryError, a runtime
// error). The cache was emptied and the allocation retried once before this was thrown.
class OutOfMemoryError : public std::runtime_error {
 public:
  OutOfMemoryError(const std::string& message, size_t bytes)
      : std::runtime_error(message), bytes_(bytes) {}
  // The bytes asked for.
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_;
};

struct MemoryStats {
  // Bytes of the blocks held by live storages, counted at their size class (what the allocator
  // really holds for them, not the bytes asked for).
  size_t bytes_in_use = 0;
  // Bytes of freed blocks kept for reuse. Always 0 with AOTGRAD_ALLOCATOR=system.
  size_t bytes_cached = 0;
  // Largest bytes_in_use since start or the last reset_peak_memory_stats().
  size_t peak_bytes_in_use = 0;
  // Allocations of at least one byte requested by storages.
  uint64_t num_allocs = 0;
  // Of those, how many reused a cached block; the rest came from the system.
  uint64_t num_cache_hits = 0;
  // Blocks handed back to the system (on free in system mode, or by empty_cache()).
  uint64_t num_system_frees = 0;
};

MemoryStats memory_stats();

// Returns every cached block to the system. Blocks in use are not touched.
void empty_cache();

// Sets peak_bytes_in_use to the current bytes_in_use.
void reset_peak_memory_stats();

// False when AOTGRAD_ALLOCATOR=system turned the cache off.
bool caching_allocator_enabled();

}  // namespace aotgrad
