#include "tensor/allocator.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "tensor/asan_poison.h"
#include "tensor/current_op.h"

namespace aotgrad {

size_t CpuAllocator::size_class(size_t nbytes) {
  if (nbytes <= kAlignment) return kAlignment;
  if (nbytes <= kLargeStep) return std::bit_ceil(nbytes);
  return (nbytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

CpuAllocator::~CpuAllocator() {
  std::lock_guard<SpinLock> held(lock_);
  release_all_locked();
}

namespace {

[[noreturn]] void throw_out_of_memory(size_t nbytes) {
  throw OutOfMemoryError(out_of_memory_message(op_label("an allocation"), nbytes, ""), nbytes);
}

}  // namespace

void* CpuAllocator::allocate(size_t nbytes) {
  if (nbytes == 0) return nullptr;
  if (nbytes > kMaxRequest) throw_out_of_memory(nbytes);
  const size_t cls = size_class(nbytes);
  std::unique_lock<SpinLock> lock(lock_);
  ++stats_.num_allocs;
  void* p = nullptr;
  if (caching_) {
    std::vector<void*>& list = free_list_locked(cls);
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
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
      lock.unlock();
      throw_out_of_memory(nbytes);
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

void CpuAllocator::deallocate(void* ptr, size_t nbytes) noexcept {
  if (!ptr) return;
  const size_t cls = size_class(nbytes);
  std::lock_guard<SpinLock> held(lock_);
  stats_.bytes_in_use -= cls;
  if (caching_) {
    try {
      free_list_locked(cls).push_back(ptr);  // may allocate: a full free list grows
      AOTGRAD_POISON(ptr, cls);  // a use after free now fails under ASan, as without the cache
      stats_.bytes_cached += cls;
      return;
    } catch (const std::bad_alloc&) {
      // No memory to remember the block: hand it back to the system instead of caching it.
    }
  }
  AOTGRAD_UNPOISON(ptr, cls);  // allocate() poisoned the slack past the request
  std::free(ptr);
  ++stats_.num_system_frees;
}

void CpuAllocator::release_all_locked() {
  auto release = [this](size_t cls, std::vector<void*>& blocks) {
    for (void* p : blocks) {
      AOTGRAD_UNPOISON(p, cls);
      std::free(p);
      ++stats_.num_system_frees;
    }
    blocks.clear();
  };
  for (size_t k = 0; k < small_lists_.size(); ++k) release(kAlignment << k, small_lists_[k]);
  for (auto& [cls, blocks] : free_lists_) release(cls, blocks);
  free_lists_.clear();
  stats_.bytes_cached = 0;
}

void CpuAllocator::empty_cache() {
  std::lock_guard<SpinLock> held(lock_);
  release_all_locked();
}

MemoryStats CpuAllocator::stats() const {
  std::lock_guard<SpinLock> held(lock_);
  return stats_;
}

void CpuAllocator::reset_peak() {
  std::lock_guard<SpinLock> held(lock_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

namespace {

// `value` with every byte outside printable ASCII, and the quote and backslash, as \xNN.
std::string escaped(const char* value) {
  std::string out;
  for (const char* c = value; *c; ++c) {
    unsigned char b = static_cast<unsigned char>(*c);
    if (b >= 0x20 && b < 0x7f && b != '"' && b != '\\') {
      out += static_cast<char>(b);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", b);
      out += hex;
    }
  }
  return out;
}

}  // namespace

AllocatorSetting parse_allocator_setting(const char* value) {
  if (!value || !*value || std::strcmp(value, "caching") == 0) return {true, ""};
  if (std::strcmp(value, "system") == 0) return {false, ""};
  // Long values are cut so the warning stays one short line.
  std::string shown = escaped(value);
  if (shown.size() > 64) shown = shown.substr(0, 64) + "...";
  return {true, "aotgrad: warning: AOTGRAD_ALLOCATOR=\"" + shown +
                    "\" is not known (accepted: caching, system); using the default, caching"};
}

CpuAllocator& cpu_allocator() {
  // Leaked on purpose: Storages destroyed by static destructors at exit still need it. The blocks
  // it caches stay reachable through it, so LeakSanitizer does not report them.
  static CpuAllocator* instance = [] {
    AllocatorSetting setting = parse_allocator_setting(std::getenv("AOTGRAD_ALLOCATOR"));
    if (!setting.warning.empty()) std::fprintf(stderr, "%s\n", setting.warning.c_str());
    return new CpuAllocator(setting.caching);
  }();
  return *instance;
}

std::string describe_bytes(size_t nbytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::string exact = std::to_string(nbytes) + " bytes";
  if (nbytes < 1024) return exact;
  double v = static_cast<double>(nbytes);
  size_t unit = 0;
  for (v /= 1024; v >= 1024 && unit + 1 < std::size(kUnits); v /= 1024) ++unit;
  char readable[32];
  std::snprintf(readable, sizeof readable, " (%.1f %s)", v, kUnits[unit]);
  return exact + readable;
}

std::string out_of_memory_message(std::string_view op, size_t nbytes, std::string_view what) {
  return "out of memory: " + std::string(op) + " asked for " + describe_bytes(nbytes) +
         std::string(what) + "; free memory or use smaller shapes";
}

MemoryStats memory_stats() { return cpu_allocator().stats(); }
void empty_cache() { cpu_allocator().empty_cache(); }
void reset_peak_memory_stats() { cpu_allocator().reset_peak(); }
bool caching_allocator_enabled() { return cpu_allocator().caching(); }

}  // namespace aotgrad
