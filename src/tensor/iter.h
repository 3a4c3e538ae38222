// Walking strided tensors in row-major logical order.
//
// NdCounter keeps one element offset per operand while a multi-index runs over `sizes`; operands
// broadcast by having stride 0 on a dim. Kernels split [0, numel) into chunks (one per OpenMP
// thread), seek() to the chunk start, then step with next().
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

template <size_t N>
class NdCounter {
 public:
  NdCounter(const IntList& sizes, const std::array<const IntList*, N>& strides,
            const std::array<int64_t, N>& base)
      : sizes_(sizes), base_(base) {
    for (size_t k = 0; k < N; ++k) strides_[k] = strides[k];
    index_.assign(sizes.size(), 0);
    offsets_ = base;
  }

  void seek(int64_t linear) {
    offsets_ = base_;
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
      int64_t s = sizes_[d];
      index_[d] = s == 0 ? 0 : linear % s;
      linear = s == 0 ? 0 : linear / s;
      for (size_t k = 0; k < N; ++k) offsets_[k] += index_[d] * (*strides_[k])[d];
    }
  }

  void next() {
    for (int64_t d = static_cast<int64_t>(sizes_.size()) - 1; d >= 0; --d) {
      for (size_t k = 0; k < N; ++k) offsets_[k] += (*strides_[k])[d];
      if (++index_[d] < sizes_[d]) return;
      for (size_t k = 0; k < N; ++k) offsets_[k] -= index_[d] * (*strides_[k])[d];
      index_[d] = 0;
    }
  }

  int64_t operator[](size_t k) const { return offsets_[k]; }

 private:
  const IntList& sizes_;
  std::array<const IntList*, N> strides_{};
  std::array<int64_t, N> base_;
  IntList index_;
  std::array<int64_t, N> offsets_;
};

// Strides that read `t` as if broadcast to `out_sizes` (0 on broadcast dims). `t`'s rank must be
// <= out_sizes.size() and its sizes must broadcast; the caller has checked.
IntList broadcast_strides(const Tensor& t, const IntList& out_sizes);

// The broadcast of two shapes; throws naming both shapes when they do not broadcast.
IntList broadcast_shapes(const IntList& a, const IntList& b);

// Whether shape `from` broadcasts to `to` (expand would accept it): trailing dims equal or 1.
bool expandable_to(const IntList& from, const IntList& to);

// Whether a geometry's elements are dense and non-overlapping: its strides, size-1 dims aside, a
// permutation of contiguous ones (contiguous, transposed, permuted; PyTorch's
// is_non_overlapping_and_dense). Its elements then fill exactly numel slots from the offset.
bool is_dense(const IntList& sizes, const IntList& strides);

}  // namespace aotgrad
