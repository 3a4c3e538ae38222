#include "tensor/small_object_pool.h"

#include <array>
#include <cstdint>
#include <memory>

#include "aotgrad/tensor.h"
#include "tensor/asan_poison.h"
#include "tensor/thread_loan.h"

namespace aotgrad {

namespace {

using pool_detail::kMaxBlocks;
using pool_detail::kMaxKeptDims;
using pool_detail::kMaxPooled;
using pool_detail::kMaxSpareImpls;
using pool_detail::kStep;

constexpr size_t kClasses = kMaxPooled / kStep;

// The class index of a request of 1..kMaxPooled bytes, and its block size.
size_t class_of(size_t nbytes) {
  return (nbytes - 1) / kStep;
}
size_t class_bytes(size_t cls) {
  return (cls + 1) * kStep;
}

struct FreeBlock {
  FreeBlock* next;
};

// One thread's blocks and spare TensorImpls. Trivially destructible and constant-initialised, so
// reaching it costs no initialisation check, and it stays readable until the thread ends: after
// the reaper below has emptied it at thread exit, `gone` sends everything to new and delete.
struct ThreadPool {
  std::array<FreeBlock*, kClasses> head;
  std::array<uint32_t, kClasses> count;
  std::array<TensorImpl*, kMaxSpareImpls> spares;
  uint32_t num_spares;
  bool reaper_set;  // the reaper of this thread exists
  bool gone;        // emptied at thread exit
};
constinit thread_local ThreadPool t_pool{};

// Empties t_pool when its thread exits; made by the first block or spare kept.
struct Reaper {
  ~Reaper();
};
thread_local Reaper t_reaper;

// Called before keeping anything in t_pool.
void ensure_reaper(ThreadPool& pool) {
  if (pool.reaper_set) return;
  pool.reaper_set = true;
  [[maybe_unused]] Reaper& r = t_reaper;  // constructs it, registering its destructor
}

Reaper::~Reaper() {
  ThreadPool& pool = t_pool;
  pool.gone = true;
  for (size_t i = 0; i < pool.num_spares; ++i) {
    AOTGRAD_UNPOISON(pool.spares[i], sizeof(TensorImpl));
    delete pool.spares[i];
  }
  pool.num_spares = 0;
  for (size_t c = 0; c < kClasses; ++c) {
    while (FreeBlock* b = pool.head[c]) {
      AOTGRAD_UNPOISON(b, class_bytes(c));
      pool.head[c] = b->next;
      ::operator delete(b);
    }
    pool.count[c] = 0;
  }
}

}  // namespace

void* pool_allocate(size_t nbytes) {
  ThreadPool& pool = t_pool;
  if (nbytes == 0 || nbytes > kMaxPooled || pool.gone) return ::operator new(nbytes);
  const size_t cls = class_of(nbytes);
  if (FreeBlock* b = pool.head[cls]) {
    AOTGRAD_UNPOISON(b, class_bytes(cls));
    pool.head[cls] = b->next;
    --pool.count[cls];
    return b;
  }
  return ::operator new(class_bytes(cls));
}

void pool_deallocate(void* p, size_t nbytes) noexcept {
  if (!p) return;
  ThreadPool& pool = t_pool;
  if (nbytes == 0 || nbytes > kMaxPooled || pool.gone) return ::operator delete(p);
  const size_t cls = class_of(nbytes);
  if (pool.count[cls] >= kMaxBlocks) return ::operator delete(p);
  ensure_reaper(pool);
  auto* b = static_cast<FreeBlock*>(p);
  b->next = pool.head[cls];
  pool.head[cls] = b;
  ++pool.count[cls];
  AOTGRAD_POISON(b, class_bytes(cls));
}

namespace {

// The deleter of new_tensor_impl()'s pointers.
struct RecycleImpl {
  void operator()(TensorImpl* impl) const noexcept {
    if (t_pool.gone || t_pool.num_spares == kMaxSpareImpls) {
      delete impl;
      return;
    }
    IntList sizes = std::move(impl->sizes);
    IntList strides = std::move(impl->strides);
    // Releases the storage, the base, the autograd state and the trace slot; may drop the last
    // reference to another pooled TensorImpl (a view's base), which is recycled first.
    std::destroy_at(impl);
    std::construct_at(impl);
    clear_keeping(sizes, kMaxKeptDims);
    clear_keeping(strides, kMaxKeptDims);
    impl->sizes = std::move(sizes);
    impl->strides = std::move(strides);
    ThreadPool& pool = t_pool;
    if (pool.num_spares == kMaxSpareImpls) {  // filled while the members above were released
      delete impl;
      return;
    }
    ensure_reaper(pool);
    pool.spares[pool.num_spares++] = impl;
    AOTGRAD_POISON(impl, sizeof(TensorImpl));
  }
};

}  // namespace

std::shared_ptr<TensorImpl> new_tensor_impl() {
  ThreadPool& pool = t_pool;
  TensorImpl* impl = nullptr;
  if (!pool.gone && pool.num_spares > 0) {
    impl = pool.spares[--pool.num_spares];
    AOTGRAD_UNPOISON(impl, sizeof(TensorImpl));
  } else {
    impl = new TensorImpl();
  }
  // Should the control block find no memory, this constructor recycles `impl` and rethrows.
  return std::shared_ptr<TensorImpl>(impl, RecycleImpl(), PoolAllocator<TensorImpl>());
}

}  // namespace aotgrad
