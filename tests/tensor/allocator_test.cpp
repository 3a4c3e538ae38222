// The caching CPU allocator: size classes, reuse of freed blocks, statistics, empty_cache, the
// system (non-caching) mode, edge sizes, and concurrent use. Each test owns a private
// CpuAllocator so that tensors made by other tests cannot move its counters; one test checks
// that tensors really draw from the process-wide one.
#include "tensor/allocator.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <new>
#include <thread>
#include <vector>

#include "aotgrad/memory.h"
#include "aotgrad/tensor.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace aotgrad {
namespace {

TEST(CpuAllocator, SizeClasses) {
  EXPECT_EQ(CpuAllocator::size_class(1), 64u);
  EXPECT_EQ(CpuAllocator::size_class(64), 64u);
  EXPECT_EQ(CpuAllocator::size_class(65), 128u);
  EXPECT_EQ(CpuAllocator::size_class(1000), 1024u);
  EXPECT_EQ(CpuAllocator::size_class(1u << 20), 1u << 20);
  EXPECT_EQ(CpuAllocator::size_class((1u << 20) + 1), 2u << 20);
  EXPECT_EQ(CpuAllocator::size_class((5u << 20) - 7), 5u << 20);
}

TEST(CpuAllocator, ReusesFreedBlockOfSameClass) {
  CpuAllocator a(/*caching=*/true);
  void* p = a.allocate(3000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % CpuAllocator::kAlignment, 0u);
  std::memset(p, 1, 3000);
  a.deallocate(p, 3000);
  // 2100 bytes share the 4096-byte class with 3000: the same block comes back.
  void* q = a.allocate(2100);
  EXPECT_EQ(q, p);
  // Another class cannot take it.
  void* r = a.allocate(5000);
  EXPECT_NE(r, p);
  a.deallocate(q, 2100);
  a.deallocate(r, 5000);
  MemoryStats s = a.stats();
  EXPECT_EQ(s.num_allocs, 3u);
  EXPECT_EQ(s.num_cache_hits, 1u);
}

TEST(CpuAllocator, StatsCountInUseCachedAndPeak) {
  CpuAllocator a(true);
  void* p = a.allocate(100);      // class 128
  void* q = a.allocate(1 << 20);  // class 1 MiB
  MemoryStats s = a.stats();
  EXPECT_EQ(s.bytes_in_use, 128u + (1u << 20));
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.peak_bytes_in_use, 128u + (1u << 20));
  EXPECT_EQ(s.num_allocs, 2u);
  a.deallocate(q, 1 << 20);
  s = a.stats();
  EXPECT_EQ(s.bytes_in_use, 128u);
  EXPECT_EQ(s.bytes_cached, 1u << 20);
  EXPECT_EQ(s.peak_bytes_in_use, 128u + (1u << 20));
  a.reset_peak();
  EXPECT_EQ(a.stats().peak_bytes_in_use, 128u);
  a.deallocate(p, 100);
  s = a.stats();
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_cached, 128u + (1u << 20));
  EXPECT_EQ(s.num_system_frees, 0u);
}

TEST(CpuAllocator, EmptyCacheReturnsCachedBlocksOnly) {
  CpuAllocator a(true);
  void* keep = a.allocate(4096);
  void* p = a.allocate(4096);
  void* q = a.allocate(10 << 20);
  a.deallocate(p, 4096);
  a.deallocate(q, 10 << 20);
  EXPECT_EQ(a.stats().bytes_cached, 4096u + (10u << 20));
  a.empty_cache();
  MemoryStats s = a.stats();
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.num_system_frees, 2u);
  EXPECT_EQ(s.bytes_in_use, 4096u);
  // The block still in use is untouched and still writable.
  std::memset(keep, 7, 4096);
  EXPECT_EQ(static_cast<unsigned char*>(keep)[4095], 7);
  // After empty_cache the next allocation of that class is a fresh one, not a hit.
  void* r = a.allocate(4096);
  EXPECT_EQ(a.stats().num_cache_hits, 0u);
  a.deallocate(r, 4096);
  a.deallocate(keep, 4096);
}

TEST(CpuAllocator, SystemModeCachesNothing) {
  CpuAllocator a(/*caching=*/false);
  void* p = a.allocate(3000);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % CpuAllocator::kAlignment, 0u);
  EXPECT_EQ(a.stats().bytes_in_use, 4096u);
  a.deallocate(p, 3000);
  void* q = a.allocate(3000);
  a.deallocate(q, 3000);
  MemoryStats s = a.stats();
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.num_cache_hits, 0u);
  EXPECT_EQ(s.num_system_frees, 2u);
  EXPECT_EQ(s.peak_bytes_in_use, 4096u);
}

TEST(CpuAllocator, ZeroBytesIsNullAndUncounted) {
  CpuAllocator a(true);
  EXPECT_EQ(a.allocate(0), nullptr);
  a.deallocate(nullptr, 0);
  MemoryStats s = a.stats();
  EXPECT_EQ(s.num_allocs, 0u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_cached, 0u);
}

TEST(CpuAllocator, HugeAllocations) {
  CpuAllocator a(true);
  // A large block (64 MiB + 1 byte rounds to 65 MiB) is served, cached and reused like any other.
  const size_t big = (size_t{64} << 20) + 1;
  void* p = a.allocate(big);
  ASSERT_NE(p, nullptr);
  static_cast<char*>(p)[big - 1] = 1;
  EXPECT_EQ(a.stats().bytes_in_use, size_t{65} << 20);
  a.deallocate(p, big);
  EXPECT_EQ(a.allocate(big), p);
  a.deallocate(p, big);
  // Impossible sizes throw OutOfMemoryError (no overflow in the rounding) and leave the counters
  // alone.
  EXPECT_THROW(a.allocate(SIZE_MAX), OutOfMemoryError);
  EXPECT_THROW(a.allocate(CpuAllocator::kMaxRequest + 1), OutOfMemoryError);
  MemoryStats s = a.stats();
  EXPECT_EQ(s.num_allocs, 2u);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_EQ(s.bytes_cached, size_t{65} << 20);
}

TEST(ConcurrencyCpuAllocator, AllocAndFreeFromManyThreadsKeepsEveryBlockAndCount) {
  CpuAllocator a(true);
  constexpr int kThreads = 4, kRounds = 2000;
  std::vector<std::thread> threads;
  std::vector<int> bad(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::pair<unsigned char*, size_t>> live;
      for (int i = 0; i < kRounds; ++i) {
        size_t n = 64u << ((i + t) % 8);  // 64 B .. 8 KiB: classes shared between threads
        auto* p = static_cast<unsigned char*>(a.allocate(n));
        std::memset(p, t + 1, n);
        live.emplace_back(p, n);
        if (live.size() > 8) {
          // A block nobody else may touch still holds this thread's bytes.
          auto [q, m] = live.front();
          for (size_t j = 0; j < m; j += 61) bad[t] += q[j] != t + 1;
          a.deallocate(q, m);
          live.erase(live.begin());
        }
      }
      for (auto [q, m] : live) a.deallocate(q, m);
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
  MemoryStats s = a.stats();
  EXPECT_EQ(s.num_allocs, uint64_t{kThreads} * kRounds);
  EXPECT_EQ(s.bytes_in_use, 0u);
  EXPECT_GT(s.num_cache_hits, 0u);
  // Every block ever obtained from the system is now cached, none lost or double-counted.
  size_t cached = s.bytes_cached;
  a.empty_cache();
  EXPECT_EQ(a.stats().bytes_cached, 0u);
  EXPECT_GT(cached, 0u);
  EXPECT_EQ(a.stats().num_system_frees, s.num_allocs - s.num_cache_hits);
}

#if defined(__SANITIZE_ADDRESS__)
// Under ASan the cache stays on, so it must hide no bug ASan would catch without it: a cached
// block is poisoned, and a reused one is addressable only up to the bytes requested.
TEST(CpuAllocator, AsanPoisonsCachedBlocksAndSlack) {
  CpuAllocator a(true);
  auto* p = static_cast<char*>(a.allocate(3000));
  EXPECT_EQ(__asan_address_is_poisoned(p + 2999), 0);
  EXPECT_NE(__asan_address_is_poisoned(p + 3000), 0);  // slack of the 4096-byte class
  a.deallocate(p, 3000);
  EXPECT_NE(__asan_address_is_poisoned(p), 0);  // use after free is reported
  auto* q = static_cast<char*>(a.allocate(4000));
  ASSERT_EQ(q, p);
  EXPECT_EQ(__asan_address_is_poisoned(q + 3999), 0);
  EXPECT_NE(__asan_address_is_poisoned(q + 4000), 0);
  a.deallocate(q, 4000);
}
#endif

TEST(CpuAllocator, TensorsUseTheProcessAllocator) {
  MemoryStats before = memory_stats();
  {
    Tensor t = make_tensor({1000}, DType::f32);  // 4000 bytes -> class 4096
    MemoryStats during = memory_stats();
    EXPECT_EQ(during.num_allocs, before.num_allocs + 1);
    EXPECT_GE(during.bytes_in_use, before.bytes_in_use + 4096);
  }
  MemoryStats after = memory_stats();
  if (caching_allocator_enabled()) {
    EXPECT_GE(after.bytes_cached, 4096u);
    Tensor again = make_tensor({1000}, DType::f32);
    EXPECT_EQ(memory_stats().num_cache_hits, after.num_cache_hits + 1);
  } else {
    EXPECT_EQ(after.bytes_cached, 0u);
    EXPECT_EQ(after.num_system_frees, before.num_system_frees + 1);
  }
}

}  // namespace
}  // namespace aotgrad
