#include "tensor/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define AOTGRAD_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define AOTGRAD_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AOTGRAD_POISON(p, n) ((void)(p), (void)(n))
#define AOTGRAD_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace aotgrad {

size_t CpuAllocator::size_class(size_t nbytes) {
  if (nbytes <= kAlignment) return kAlignment;
  if (nbytes <= kLargeStep) return std::bit_ceil(nbytes);
  return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

CpuAllocator::~CpuAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_all_locked();
}

void* CpuAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > kMaxRequest) throw std::bad_alloc();
  const size_t cls = size_class(nbytes);
  std::unique_lock<std::mutex> lock(mutex_);
  ++stats_.num_allocs;
  void* p = nullptr;
  if (caching_) {
    auto it = free_lists_.find(cls);
    if (it != free_lists_.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      stats_.bytes_cached -= cls;
      ++stats_.num_cache_hits;
    }
  }
  if (!p) {
    // The system call needs no lock; dropping it lets other threads reuse cached blocks meanwhile.
    lock.unlock();
    p = std::aligned_alloc(kAlignment, cls);
    lock.lock();
    if (!p && stats_.bytes_cached > 0) {
      release_all_locked();  // the cache may hold exactly what the system lacks
      lock.unlock();
      p = std::aligned_alloc(kAlignment, cls);
      lock.lock();
    }
    if (!p) {
      --stats_.num_allocs;
      throw std::bad_alloc();
    }
  }
  stats_.bytes_in_use += cls;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  lock.unlock();
  // Only the requested bytes become addressable: ASan reports a read into the class's slack.
  AOTGRAD_UNPOISON(p, nbytes);
  AOTGRAD_POISON(static_cast<char*>(p) + nbytes, cls - nbytes);
  return p;
}

void CpuAllocator::deallocate(void* ptr, size_t nbytes) {
  if (!ptr) return;
  const size_t cls = size_class(nbytes);
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= cls;
  if (caching_) {
    AOTGRAD_POISON(ptr, cls);  // a use after free now fails under ASan, as without the cache
    free_lists_[cls].push_back(ptr);
    stats_.bytes_cached += cls;
  } else {
    AOTGRAD_UNPOISON(ptr, cls);
    std::free(ptr);
    ++stats_.num_system_frees;
  }
}

void CpuAllocator::release_all_locked() {
  for (auto& [cls, blocks] : free_lists_) {
    for (void* p : blocks) {
      AOTGRAD_UNPOISON(p, cls);
      std::free(p);
      ++stats_.num_system_frees;
    }
  }
  free_lists_.clear();
  stats_.bytes_cached = 0;
}

void CpuAllocator::empty_cache() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_all_locked();
}

MemoryStats CpuAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CpuAllocator::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

namespace {

bool caching_from_env() {
  const char* v = std::getenv("AOTGRAD_ALLOCATOR");
  if (!v || !*v || std::strcmp(v, "caching") == 0) return true;
  if (std::strcmp(v, "system") == 0) return false;
  throw std::invalid_argument(std::string("AOTGRAD_ALLOCATOR=") + v +
                              " is not known: use 'caching' (the default) or 'system'");
}

}  // namespace

CpuAllocator& cpu_allocator() {
  // Leaked on purpose: Storages destroyed by static destructors at exit still need it. The blocks
  // it caches stay reachable through it, so LeakSanitizer does not report them.
  static CpuAllocator* instance = new CpuAllocator(caching_from_env());
  return *instance;
}

MemoryStats memory_stats() { return cpu_allocator().stats(); }
void empty_cache() { cpu_allocator().empty_cache(); }
void reset_peak_memory_stats() { cpu_allocator().reset_peak(); }
bool caching_allocator_enabled() { return cpu_allocator().caching(); }

}  // namespace aotgrad
