// Joining, splitting and indexing ops (ops/joining.cpp, ops/indexing.cpp). Same conventions as
// ops.h: each function dispatches one op-table row, so it runs eagerly with autograd or is
// recorded when traced; negative dims count from the end. Index tensors are i64 and hold
// non-negative in-range indices (an out-of-range index throws std::invalid_argument naming the
// op, the index and the valid range).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

// ---- joining (ops/joining.cpp) ----
// Joins along an existing dim; dtypes promote as torch.cat. A 1-D tensor with no elements is
// skipped whatever the other tensors' rank (PyTorch's legacy empty tensor).
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
// Joins equal-shaped tensors along a new dim.
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- splitting: the pieces are views of `a` ----
// Pieces of split_size along dim (the last one may be shorter).
std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim = 0);
// Pieces of the given sizes, which must sum to a.size(dim).
std::vector<Tensor> split_with_sizes(const Tensor& a, const IntList& split_sizes, int64_t dim = 0);
// The pieces of split as fresh tensors, not views (no aliasing with self).
std::vector<Tensor> unsafe_split(const Tensor& a, int64_t split_size, int64_t dim = 0);
// a.size(dim) pieces with dim removed.
std::vector<Tensor> unbind(const Tensor& a, int64_t dim = 0);
// At most `chunks` pieces of ceil(a.size(dim) / chunks) (fewer when they run out, as torch).
std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim = 0);

// ---- indexing (ops/indexing.cpp) ----
// a with dim replaced by a.index(index[j]) for j in the 1-D (or 0-D) index.
Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index);
// out[i] = a[i with i[dim] = index[i]]; out has index's shape.
Tensor gather(const Tensor& a, int64_t dim, const Tensor& index);
// a, then out[i with i[dim] = index[i]] += src[i] for every i of index's shape.
Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src);
// a, then out.select(dim, index[j]) += alpha * source.select(dim, j).
Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha = 1);
// Rows of the 2-D weight picked by `indices`: shape indices.sizes() + [weight.size(1)].
// padding_idx >= 0: that row gets no gradient. scale_grad_by_freq: each row's gradient is divided
// by how often it occurs in `indices`.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1,
                 bool scale_grad_by_freq = false);
// The gradient of embedding for its weight ([num_weights, grad.size(-1)]).
Tensor embedding_dense_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq);
// mask ? value : a, broadcast to the shape of both; a's dtype. mask is b8; a Tensor value is
// 0-dim (and receives a gradient).
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value);
Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value);
// PyTorch's advanced indexing, a[indices]: per leading dim of a, an undefined Tensor (None: the
// whole dim) or an index tensor, i64 (negative values count from the end) or a b8 mask covering
// as many dims as it has. The index tensors broadcast to one shape B, which replaces the indexed
// dims when they are adjacent and comes first otherwise. A mask is only accepted eagerly: its
// result shape depends on its values, which a traced graph cannot hold.
Tensor index(const Tensor& a, const std::vector<Tensor>& indices);
// A copy of a with a[indices] = values (values broadcast to the shape of a[indices]; a's dtype);
// accumulate adds instead, summing duplicate indices.
Tensor index_put(const Tensor& a, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
Tensor& index_put_(Tensor& a, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate = false);
// Lower / upper triangle of each matrix (last two dims) from the diagonal-th diagonal; the rest 0.
Tensor tril(const Tensor& a, int64_t diagonal = 0);
Tensor triu(const Tensor& a, int64_t diagonal = 0);

// ---- LibTorch's indexing API: t.index({Slice(0, 2), None, Ellipsis, 3, idx}) ----
namespace indexing {
// torch::indexing::None is std::nullopt, so Slice(None, 3) reads as Python's [:3].
inline constexpr std::nullopt_t None = std::nullopt;
struct EllipsisIndexType {};
inline constexpr EllipsisIndexType Ellipsis{};

// Python's start:stop:step; an absent field takes Python's default.
class Slice {
 public:
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  std::optional<int64_t> start() const { return start_; }
  std::optional<int64_t> stop() const { return stop_; }
  std::optional<int64_t> step() const { return step_; }

 private:
  std::optional<int64_t> start_, stop_, step_;
};
}  // namespace indexing

// One entry of Python's t[...]: an integer (selects, drops the dim), a Slice, None (a new size-1
// dim), Ellipsis (as many whole dims as the other entries leave), a bool (a new dim of size 1
// or 0) or an index tensor (i64 values or a b8 mask: advanced indexing, as index()).
class TensorIndex {
 public:
  enum class Kind : uint8_t { none, ellipsis, integer, boolean, slice, tensor };
  TensorIndex(std::nullopt_t) : kind_(Kind::none) {}                          // NOLINT: implicit
  TensorIndex(indexing::EllipsisIndexType) : kind_(Kind::ellipsis) {}         // NOLINT
  TensorIndex(int64_t i) : kind_(Kind::integer), integer_(i) {}               // NOLINT
  TensorIndex(int i) : kind_(Kind::integer), integer_(i) {}                   // NOLINT
  TensorIndex(bool b) : kind_(Kind::boolean), integer_(b ? 1 : 0) {}          // NOLINT
  TensorIndex(indexing::Slice s) : kind_(Kind::slice), slice_(s) {}           // NOLINT
  TensorIndex(Tensor t) : kind_(Kind::tensor), tensor_(std::move(t)) {}       // NOLINT
  // "..." is Ellipsis, as in LibTorch; any other text throws std::invalid_argument.
  TensorIndex(const char* text);  // NOLINT

  Kind kind() const { return kind_; }
  int64_t integer() const { return integer_; }
  bool boolean() const { return integer_ != 0; }
  const indexing::Slice& slice() const { return slice_; }
  const Tensor& tensor() const { return tensor_; }

 private:
  Kind kind_;
  int64_t integer_ = 0;
  indexing::Slice slice_;
  Tensor tensor_;
};

}  // namespace aotgrad
