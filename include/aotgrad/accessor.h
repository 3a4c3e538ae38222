// TensorAccessor: LibTorch's tensor.accessor<T, N>(), element access through the strides.
//
//   Tensor t = zeros({2, 3});
//   auto a = t.accessor<float, 2>();   // checks dtype f32 and 2 dims, in one line if not
//   a[1][2] = 5;                       // writes t's element (1, 2) in place
//   float s = a[0][1] + a.size(1);     // size(i) and stride(i) of the dimensions left
//
// Reading guide: an accessor is a data pointer plus the sizes and strides of the dimensions it
// has left; a[i] moves the pointer by i * stride(0) and drops the first dimension, and a
// one-dimensional accessor's a[i] is the element itself. As in LibTorch, the accessor points
// into the tensor's memory and metadata without keeping them: the tensor must outlive it and keep
// its shape (so accessor() on a temporary tensor does not compile), indices are not bounds-
// checked, and writes bypass autograd and the version counter, as writes through data_ptr do.
// T may be const (accessor<const float, 2>) for read-only access.
// Thread-safety: as the raw memory it points at.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "aotgrad/tensor.h"

namespace aotgrad {
namespace accessor_detail {
// The dtype whose elements are C++ T (the element types a public data_ptr<T> takes).
template <typename T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::f32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::f64;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::i64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::i32;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::u8;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::b8;
  else
    static_assert(sizeof(T) == 0,
                  "accessor<T, N> takes float, double, int64_t, int32_t, uint8_t or bool");
}
// Throws one line naming the tensor's dtype and shape when it is not `dtype` with `dims`
// dimensions, or is undefined or fake.
void check(const Tensor& t, DType dtype, size_t dims);
}  // namespace accessor_detail

template <typename T, size_t N>
class TensorAccessor {
  static_assert(N > 0, "a TensorAccessor has at least one dimension");

 public:
  TensorAccessor(T* data, const int64_t* sizes, const int64_t* strides)
      : data_(data), sizes_(sizes), strides_(strides) {}

  // The slice at index i of the first dimension, or for N == 1 the element itself.
  decltype(auto) operator[](int64_t i) const {
    if constexpr (N == 1)
      return data_[i * strides_[0]];
    else
      return TensorAccessor<T, N - 1>(data_ + i * strides_[0], sizes_ + 1, strides_ + 1);
  }
  int64_t size(int64_t i) const { return sizes_[i]; }
  int64_t stride(int64_t i) const { return strides_[i]; }
  // The N sizes and strides, as LibTorch's sizes() / strides() (IntArrayRef there).
  IntList sizes() const { return IntList(sizes_, sizes_ + N); }
  IntList strides() const { return IntList(strides_, strides_ + N); }
  T* data() const { return data_; }

 private:
  T* data_;
  const int64_t* sizes_;
  const int64_t* strides_;
};

template <typename T, size_t N>
TensorAccessor<T, N> Tensor::accessor() const& {
  using Element = std::remove_const_t<T>;
  accessor_detail::check(*this, accessor_detail::dtype_of<Element>(), N);
  return TensorAccessor<T, N>(data_ptr<Element>(), sizes().data(), strides().data());
}

}  // namespace aotgrad
