// Scratch reused across calls on one thread: the per-call path of a small compiled function
// (the backward walk's vectors, a cpp program's value slots) borrows its thread's T, which the
// call before it emptied but left with its capacity, instead of allocating its own.
//
// ThreadLoan<T> lends this thread's T to one holder at a time; a loan taken while another is out
// on the thread (a call made from inside a call: backward() inside a node's apply, a compiled
// function inside a custom op's kernel) gets a T of its own. Either way the loan calls
// T::reset() when it ends, exception or not, so nothing a call held outlives it.
// Needs: T default-constructible, with `void reset()` emptying it.
// Thread-safety: each thread has its own T; a loan must end on the thread that took it.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace aotgrad {

template <typename T>
class ThreadLoan {
 public:
  ThreadLoan() {
    thread_local Cached cached;
    if (!cached.lent) {
      cached.lent = true;
      lent_ = &cached;
      t_ = &cached.value;
    } else {
      own_ = std::make_unique<T>();
      t_ = own_.get();
    }
  }
  ~ThreadLoan() {
    t_->reset();
    if (lent_) lent_->lent = false;
  }
  ThreadLoan(const ThreadLoan&) = delete;
  ThreadLoan& operator=(const ThreadLoan&) = delete;

  T& operator*() const { return *t_; }
  T* operator->() const { return t_; }

 private:
  struct Cached {
    T value;
    bool lent = false;
  };
  Cached* lent_ = nullptr;  // this thread's, when lent
  T* t_ = nullptr;
  std::unique_ptr<T> own_;
};

// Empties `v`, keeping its capacity up to `keep` elements; beyond that its memory goes back, so
// that one large call does not leave a thread holding a large buffer for its life.
template <typename V>
void clear_keeping(V& v, size_t keep) {
  if (v.capacity() > keep)
    V().swap(v);
  else
    v.clear();
}

}  // namespace aotgrad
