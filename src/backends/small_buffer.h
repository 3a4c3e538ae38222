// A fixed-length scratch array for one call of a compiled program: its first N elements live
// inside the object (on the caller's stack), so the per-call path of a backend gathers sizes,
// strides and data pointers for a kernel without touching the heap; longer requests fall back to
// a vector, so no length is ever refused.
//
// Needs: T default-constructible and copyable. Guarantees: size() elements, each a copy of the
// value given; data() stays valid for the object's lifetime (the buffer never grows). Not shared
// between threads: each call owns its own.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <vector>

namespace aotgrad::backends {

template <typename T, size_t N>
class SmallBuffer {
 public:
  explicit SmallBuffer(size_t n, const T& value = T()) : size_(n) {
    if (n > N)
      heap_.assign(n, value);
    else
      std::fill_n(inline_.begin(), n, value);
  }
  SmallBuffer(const SmallBuffer&) = delete;
  SmallBuffer& operator=(const SmallBuffer&) = delete;

  size_t size() const { return size_; }
  // Whether the elements live in the object (size() <= N).
  bool is_inline() const { return size_ <= N; }
  T* data() { return is_inline() ? inline_.data() : heap_.data(); }
  const T* data() const { return is_inline() ? inline_.data() : heap_.data(); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  size_t size_;
  std::array<T, N> inline_;  // only the first size_ are set: no fill of the whole capacity per call
  std::vector<T> heap_;
};

}  // namespace aotgrad::backends
