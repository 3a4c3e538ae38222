// The per-thread pool of small blocks and spare TensorImpls (tensor/small_object_pool.h): a
// block of a size class comes back to the next request of that class on the thread that freed
// it, a recycled TensorImpl starts as a default one (nothing of the dead tensor survives, weak
// references to it expire), blocks cross threads, and ASan still sees a use after free.
#include "tensor/small_object_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "aotgrad/aotgrad.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

namespace aotgrad {
namespace {

TEST(SmallObjectPool, AFreedBlockServesTheNextRequestOfItsClass) {
  void* p = pool_allocate(40);
  pool_deallocate(p, 40);
  void* q = pool_allocate(50);  // 33..64 bytes share one class
  EXPECT_EQ(q, p);
  void* r = pool_allocate(100);  // another class
  EXPECT_NE(r, p);
  pool_deallocate(q, 50);
  pool_deallocate(r, 100);
}

TEST(SmallObjectPool, LargeRequestsAndFullListsGoToOperatorNew) {
  std::vector<void*> big;
  for (int i = 0; i < 4; ++i) big.push_back(pool_allocate(pool_detail::kMaxPooled + 1));
  for (void* p : big) pool_deallocate(p, pool_detail::kMaxPooled + 1);
  // More blocks of one class than a list keeps: all are usable, and freeing them all is fine.
  std::vector<void*> many;
  for (size_t i = 0; i < 3 * pool_detail::kMaxBlocks; ++i) {
    many.push_back(pool_allocate(24));
    std::memset(many.back(), 0xab, 24);
  }
  for (void* p : many) pool_deallocate(p, 24);
  void* again = pool_allocate(24);
  EXPECT_NE(again, nullptr);
  pool_deallocate(again, 24);
}

TEST(ConcurrencySmallObjectPool, ABlockFreedOnAnotherThreadJoinsThatThreadsList) {
  void* p = pool_allocate(200);
  void* reused_there = nullptr;
  std::thread t([&] {
    pool_deallocate(p, 200);
    reused_there = pool_allocate(200);
    pool_deallocate(reused_there, 200);
  });
  t.join();
  EXPECT_EQ(reused_there, p);
  // The thread's lists went back to operator delete when it exited; this thread's list never
  // held p, so it cannot hand it out.
  void* here = pool_allocate(200);
  pool_deallocate(here, 200);
}

TEST(SmallObjectPool, ARecycledTensorImplStartsAsADefaultOne) {
  // Holding more tensors than a thread keeps spares empties this thread's spares, so the
  // tensors dropped below are sure to be kept.
  std::vector<Tensor> holding;
  for (size_t i = 0; i <= pool_detail::kMaxSpareImpls; ++i) holding.push_back(empty({1}));
  const TensorImpl* first = nullptr;
  std::weak_ptr<TensorImpl> weak;
  {
    Tensor base = ones({4, 6}).requires_grad_();
    Tensor t = (base * 2).transpose(0, 1);
    t.retain_grad();
    t.sum().backward();
    ASSERT_TRUE(t.grad().defined());
    first = t.impl();
    weak = t.impl_ptr();
  }
  EXPECT_TRUE(weak.expired());
  // Tensors made now take spare TensorImpls, the one above among them.
  std::vector<Tensor> made;
  bool reused = false;
  for (int i = 0; i < 8; ++i) {
    made.push_back(empty({3}));
    const TensorImpl* impl = made.back().impl();
    reused = reused || impl == first;
    EXPECT_EQ(impl->sizes, (IntList{3}));
    EXPECT_EQ(impl->strides, (IntList{1}));
    EXPECT_EQ(impl->storage_offset, 0);
    EXPECT_EQ(impl->base, nullptr);
    EXPECT_EQ(impl->autograd, nullptr);
    EXPECT_EQ(impl->trace.owner, nullptr);
    EXPECT_EQ(impl->trace.value, 0u);
    EXPECT_EQ(impl->trace.alias, UINT32_MAX);
    EXPECT_FALSE(made.back().requires_grad());
    EXPECT_FALSE(made.back().is_view());
  }
  EXPECT_TRUE(reused);
  EXPECT_TRUE(weak.expired());  // the reused TensorImpl is a new tensor to weak references
}

TEST(ConcurrencySmallObjectPool, TensorsMadeOnOneThreadAndDroppedOnAnotherStayCorrect) {
  // Producers make tensors (with autograd state) that consumers drop, so blocks and spare
  // TensorImpls move between threads' lists; every value read must be the one written.
  constexpr int kRounds = 300;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int w = 0; w < 4; ++w)
    threads.emplace_back([w, &wrong] {
      std::vector<Tensor> passed;
      for (int i = 0; i < kRounds; ++i) {
        Tensor a = full({5}, static_cast<double>(w * 1000 + i)).requires_grad_();
        Tensor b = (a * 2).sum();
        b.backward();
        if (a.grad().data_ptr<float>()[0] != 2.0f ||
            b.item<float>() != 10.0f * static_cast<float>(w * 1000 + i))
          ++wrong;
        passed.push_back(a);
        if (passed.size() > 16) passed.erase(passed.begin());
      }
      // Hand the rest to another thread to drop.
      std::thread([kept = std::move(passed)]() mutable { kept.clear(); }).join();
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
}

#if defined(__SANITIZE_ADDRESS__)
TEST(SmallObjectPool, AsanPoisonsWaitingBlocksAndSpares) {
  void* p = pool_allocate(64);
  pool_deallocate(p, 64);
  EXPECT_TRUE(__asan_address_is_poisoned(p));
  void* q = pool_allocate(64);
  EXPECT_EQ(q, p);
  EXPECT_FALSE(__asan_address_is_poisoned(q));
  pool_deallocate(q, 64);

  const TensorImpl* dead = nullptr;
  {
    Tensor t = empty({2});
    dead = t.impl();
  }
  EXPECT_TRUE(__asan_address_is_poisoned(dead));
}
#endif

}  // namespace
}  // namespace aotgrad
