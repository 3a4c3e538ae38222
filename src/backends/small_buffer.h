// A fixed-length scratch array for one call of a compiled program: its first N elements live
// inside the object (on the caller's stack), so the per-call path of a backend gathers sizes,
// strides and data pointers for a kernel without touching the heap; longer requests fall back to
// a vector, so no length is ever refused.
//
// Needs: T default-constructible and copyable. Guarantees: size() elements, each a copy of the
// value given; data() stays valid for the object's lifetime (the buffer never grows). Not shared
// between threads: each call owns its own.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <vector>

namespace aotgrad::backends {

template <typename T, size_t N>
class SmallBuffer {
 public:
  explicit SmallBuffer(size_t n, const T& value = T()) : size_(n) {
    if (n > N)
      heap_.assign(n, value);
    else
      std::uninitialized_fill_n(inline_data(), n, value);
  }
  ~SmallBuffer() {
    if (is_inline()) std::destroy_n(inline_data(), size_);
  }
  SmallBuffer(const SmallBuffer&) = delete;
  SmallBuffer& operator=(const SmallBuffer&) = delete;

  size_t size() const { return size_; }
  // Whether the elements live in the object (size() <= N).
  bool is_inline() const { return size_ <= N; }
  T* data() { return is_inline() ? inline_data() : heap_.data(); }
  const T* data() const { return is_inline() ? inline_data() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  T* inline_data() { return std::launder(reinterpret_cast<T*>(inline_)); }
  const T* inline_data() const { return std::launder(reinterpret_cast<const T*>(inline_)); }

  size_t size_;
  // Only the first size_ elements are made (and destroyed): a call constructs no more than it
  // uses (measured: zeroing eight Tensors took a `rep stos` of 128 bytes per kernel run).
  alignas(T) unsigned char inline_[N * sizeof(T)];
  std::vector<T> heap_;
};

}  // namespace aotgrad::backends
