// The joining family: cat and stack (fresh tensors), and the multi-output views split,
// split_with_sizes, unbind and chunk (schema `-> Tensor(a)[]`: every result views self).
//
// Reading guide: the split rows share one meta shape: a list of piece lengths along dim turned
// into view geometry (pieces()), and one kernel (views_kernel) that makes each piece a view of
// self. Their VJPs are PyTorch's: the pieces' gradients (zeros for pieces without one) joined by
// cat, or by stack for unbind; cat's VJP slices its gradient, stack's selects.
// Traced, each piece is a view the tracer follows (a returned piece aliases the input; an in-place
// op on a piece is scattered back into it).
#include "kernels/joining.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"
#include "tensor/checked_math.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kCat = "aten.cat.default";
constexpr std::string_view kStack = "aten.stack.default";
constexpr std::string_view kSplit = "aten.split.Tensor";
constexpr std::string_view kSplitWithSizes = "aten.split_with_sizes.default";
constexpr std::string_view kUnbind = "aten.unbind.int";
constexpr std::string_view kChunk = "aten.chunk.default";

// ---- cat and stack ----

// PyTorch's legacy empty tensor: cat skips a [0] input whatever the other inputs' rank.
bool is_skipped_in_cat(const Tensor& t, int64_t out_dim) {
  return t.dim() == 1 && t.sizes()[0] == 0 && out_dim != 1;
}

struct CatShape {
  IntList sizes;
  int64_t dim = 0;
};

CatShape cat_shape(const TensorList& ts, int64_t dim) {
  if (ts.empty()) fail(kCat, "expected a non-empty list of tensors");
  for (size_t i = 0; i < ts.size(); ++i)
    if (ts[i].dim() == 0)
      fail(kCat, "zero-dimensional tensor (at position " + std::to_string(i) +
                     ") cannot be concatenated; unsqueeze it first, or use stack");
  // The first tensor that is not a legacy empty one sets the rank (all legacy: the result is too).
  const auto ref_it = std::find_if(
      ts.begin(), ts.end(), [](const Tensor& t) { return !(t.dim() == 1 && t.sizes()[0] == 0); });
  const Tensor& ref = ref_it == ts.end() ? ts[0] : *ref_it;
  const size_t ref_index = static_cast<size_t>(&ref - ts.data());
  CatShape s{ref.sizes(), dim_arg(kCat, dim, ref.dim())};
  s.sizes[s.dim] = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (is_skipped_in_cat(t, ref.dim())) continue;
    if (t.dim() != ref.dim())
      fail(kCat, "tensors must have the same number of dimensions: tensor " +
                     std::to_string(ref_index) + " has " + std::to_string(ref.dim()) + " (shape " +
                     shape_to_string(ref.sizes()) + "), tensor " + std::to_string(i) + " has " +
                     std::to_string(t.dim()) + " (shape " + shape_to_string(t.sizes()) + ")");
    for (int64_t d = 0; d < t.dim(); ++d)
      if (d != s.dim && t.sizes()[d] != ref.sizes()[d])
        fail(kCat, "sizes of tensors must match except in dimension " + std::to_string(s.dim) +
                       ": expected size " + std::to_string(ref.sizes()[d]) + " but got size " +
                       std::to_string(t.sizes()[d]) + " at dimension " + std::to_string(d) +
                       " for tensor " + std::to_string(i) + " of the list (shape " +
                       shape_to_string(t.sizes()) + ")");
    std::optional<int64_t> total = checked_add(s.sizes[s.dim], t.sizes()[s.dim]);
    if (!total)
      fail(kCat, "the sizes of the tensors along dim " + std::to_string(s.dim) +
                     " add up past int64 at tensor " + std::to_string(i) + " (shape " +
                     shape_to_string(t.sizes()) + "); concatenate fewer or smaller tensors");
    s.sizes[s.dim] = *total;
  }
  return s;
}

std::vector<TensorMeta> cat_meta(const OpArgs& a) {
  const TensorList& ts = tensor_list_arg(a, 0);
  CatShape s = cat_shape(ts, int_arg(a, 1));
  return {TensorMeta::contiguous(s.sizes, result_type(ts))};
}

std::vector<Tensor> cat_kernel(const OpArgs& a) {
  TensorMeta m = cat_meta(a).at(0);
  const TensorList& ts = tensor_list_arg(a, 0);
  Tensor out = make_tensor(m.sizes, m.dtype);
  kernels::cat_into(out, ts, cat_shape(ts, int_arg(a, 1)).dim);
  return {out};
}

// The gradient reaching input `t` from the part `g` of the result's gradient: cast back to t's
// dtype when cat or stack promoted it.
Tensor as_dtype_of(const Tensor& g, const Tensor& t) {
  return g.dtype() == t.dtype() ? g : to(g, t.dtype());
}

std::vector<Tensor> cat_vjp(const VjpContext& c) {
  const TensorList& ts = tensor_list_arg(c.args, 0);
  const CatShape s = cat_shape(ts, int_arg(c.args, 1));
  const int64_t out_dim = static_cast<int64_t>(s.sizes.size());
  std::vector<Tensor> grads;
  int64_t offset = 0;
  for (size_t i = 0; i < ts.size(); ++i) {
    const Tensor& t = ts[i];
    if (is_skipped_in_cat(t, out_dim)) {
      grads.push_back(c.needs(i) ? zeros(t.sizes(), t.dtype()) : Tensor());
      continue;
    }
    const int64_t len = t.sizes()[s.dim];
    grads.push_back(c.needs(i) ? as_dtype_of(slice(c.grad(), s.dim, offset, offset + len), t)
                               : Tensor());
    offset += len;
  }
  return grads;
}

int64_t stack_dim(const TensorList& ts, int64_t dim) {
  if (ts.empty()) fail(kStack, "expected a non-empty list of tensors");
  for (size_t i = 1; i < ts.size(); ++i)
    if (ts[i].sizes() != ts[0].sizes())
      fail(kStack, "expects each tensor to be equal size, but got " +
                       shape_to_string(ts[0].sizes()) + " at entry 0 and " +
                       shape_to_string(ts[i].sizes()) + " at entry " + std::to_string(i));
  return dim_arg(kStack, dim, ts[0].dim() + 1);
}

std::vector<TensorMeta> stack_meta(const OpArgs& a) {
  const TensorList& ts = tensor_list_arg(a, 0);
  const int64_t d = stack_dim(ts, int_arg(a, 1));
  IntList sizes = ts[0].sizes();
  sizes.insert(sizes.begin() + d, static_cast<int64_t>(ts.size()));
  return {TensorMeta::contiguous(sizes, result_type(ts))};
}

std::vector<Tensor> stack_kernel(const OpArgs& a) {
  TensorMeta m = stack_meta(a).at(0);
  const TensorList& ts = tensor_list_arg(a, 0);
  const int64_t d = stack_dim(ts, int_arg(a, 1));
  // Each input becomes a size-1 slab of the result along the new dim.
  TensorList slabs;
  for (const Tensor& t : ts) {
    IntList sizes = t.sizes(), strides = t.strides();
    sizes.insert(sizes.begin() + d, 1);
    strides.insert(strides.begin() + d, 1);
    slabs.push_back(make_view(t, sizes, strides, t.storage_offset()));
  }
  Tensor out = make_tensor(m.sizes, m.dtype);
  kernels::cat_into(out, slabs, d);
  return {out};
}

std::vector<Tensor> stack_vjp(const VjpContext& c) {
  const TensorList& ts = tensor_list_arg(c.args, 0);
  const int64_t d = stack_dim(ts, int_arg(c.args, 1));
  std::vector<Tensor> grads;
  for (size_t i = 0; i < ts.size(); ++i)
    grads.push_back(c.needs(i) ? as_dtype_of(select(c.grad(), d, static_cast<int64_t>(i)), ts[i])
                               : Tensor());
  return grads;
}

// ---- split, split_with_sizes, chunk, unbind ----

const Tensor& split_self(std::string_view op, const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() == 0)
    fail(op, "expects at least a 1-dimensional tensor, got a 0-dim one; unsqueeze it first");
  return self;
}

// The view geometry of consecutive pieces of `lengths` along dim d.
std::vector<TensorMeta> pieces(const Tensor& self, int64_t d, const IntList& lengths) {
  std::vector<TensorMeta> out;
  int64_t start = 0;
  for (int64_t len : lengths) {
    TensorMeta m{self.dtype(), self.sizes(), self.strides(),
                 self.storage_offset() + start * self.strides()[d]};
    m.sizes[d] = len;
    out.push_back(std::move(m));
    start += len;
  }
  return out;
}

// Pieces of split_size (the last may be shorter); one empty piece for an empty dim.
IntList split_lengths(std::string_view op, int64_t dim_size, int64_t split_size) {
  if (split_size < 0)
    fail(op, "split_size must be non-negative, got " + std::to_string(split_size));
  if (split_size == 0 && dim_size != 0)
    fail(op, "split_size can only be 0 if the dimension size is 0, but the dimension has size " +
                 std::to_string(dim_size));
  // Rounds up without dim_size + split_size - 1, which wraps for a huge split_size.
  const int64_t n =
      split_size == 0 ? 1
                      : std::max<int64_t>(dim_size / split_size + (dim_size % split_size != 0), 1);
  IntList lengths(n, split_size);
  lengths.back() = dim_size - split_size * (n - 1);
  return lengths;
}

std::vector<TensorMeta> split_meta(const OpArgs& a) {
  const Tensor& self = split_self(kSplit, a);
  const int64_t d = dim_arg(kSplit, int_arg(a, 2), self.dim());
  return pieces(self, d, split_lengths(kSplit, self.sizes()[d], int_arg(a, 1)));
}

std::vector<TensorMeta> split_with_sizes_meta(const OpArgs& a) {
  const Tensor& self = split_self(kSplitWithSizes, a);
  const int64_t d = dim_arg(kSplitWithSizes, int_arg(a, 2), self.dim());
  const IntList& lengths = int_list_arg(a, 1);
  int64_t total = 0;
  for (int64_t len : lengths) {
    if (len < 0)
      fail(kSplitWithSizes, "split_sizes " + shape_to_string(lengths) +
                                " holds a negative size; every size must be >= 0");
    std::optional<int64_t> sum = checked_add(total, len);
    if (!sum)
      fail(kSplitWithSizes, "split_sizes " + shape_to_string(lengths) +
                                " sum past int64; they must sum to " +
                                std::to_string(self.sizes()[d]) + ", the size of dimension " +
                                std::to_string(d) + " of self");
    total = *sum;
  }
  if (total != self.sizes()[d])
    fail(kSplitWithSizes, "split_sizes " + shape_to_string(lengths) + " sum to " +
                              std::to_string(total) + ", but must sum exactly to " +
                              std::to_string(self.sizes()[d]) + " (the size of dimension " +
                              std::to_string(d) + " of self " + shape_to_string(self.sizes()) +
                              ")");
  return pieces(self, d, lengths);
}

std::vector<TensorMeta> chunk_meta(const OpArgs& a) {
  const Tensor& self = split_self(kChunk, a);
  const int64_t chunks = int_arg(a, 1);
  if (chunks <= 0) fail(kChunk, "chunks must be greater than 0, got " + std::to_string(chunks));
  const int64_t d = dim_arg(kChunk, int_arg(a, 2), self.dim());
  const int64_t dim_size = self.sizes()[d];
  const int64_t split_size = dim_size / chunks + (dim_size % chunks != 0);
  // An empty dim still gives `chunks` (empty) pieces, as torch.chunk does.
  if (dim_size == 0) return pieces(self, d, IntList(chunks, 0));
  return pieces(self, d, split_lengths(kChunk, dim_size, split_size));
}

std::vector<TensorMeta> unbind_meta(const OpArgs& a) {
  const Tensor& self = split_self(kUnbind, a);
  const int64_t d = dim_arg(kUnbind, int_arg(a, 1), self.dim());
  std::vector<TensorMeta> out;
  for (int64_t i = 0; i < self.sizes()[d]; ++i) {
    TensorMeta m{self.dtype(), self.sizes(), self.strides(),
                 self.storage_offset() + i * self.strides()[d]};
    m.sizes.erase(m.sizes.begin() + d);
    m.strides.erase(m.strides.begin() + d);
    out.push_back(std::move(m));
  }
  return out;
}

template <MetaFn Meta>
std::vector<Tensor> views_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  std::vector<Tensor> out;
  for (const TensorMeta& m : Meta(a))
    out.push_back(make_view(self, m.sizes, m.strides, m.storage_offset));
  return out;
}

// unsafe_split / unsafe_split_with_sizes: the pieces of split, as fresh tensors rather than views
// (what ATen's LSTM/GRU decompositions record). Same checks and gradient as split.
template <MetaFn Meta>
std::vector<TensorMeta> fresh_pieces_meta(const OpArgs& a) {
  std::vector<TensorMeta> ms = Meta(a);
  for (TensorMeta& m : ms) m = TensorMeta::contiguous(m.sizes, m.dtype);
  return ms;
}
template <MetaFn Meta>
std::vector<Tensor> copies_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  std::vector<Tensor> out;
  for (const TensorMeta& m : Meta(a))
    out.push_back(kernels::contiguous_copy(make_view(self, m.sizes, m.strides, m.storage_offset),
                                           self.dtype()));
  return out;
}

// The gradients of the pieces, zeros standing in for pieces that received none.
std::vector<Tensor> piece_grads(const VjpContext& c) {
  std::vector<Tensor> grads;
  for (size_t i = 0; i < c.outputs.size(); ++i)
    grads.push_back(c.grad(i).defined() ? c.grad(i)
                                        : zeros(c.output(i).sizes(), c.output(i).dtype()));
  return grads;
}

// split, split_with_sizes and chunk: dim is argument 2 of each.
std::vector<Tensor> split_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const int64_t d = wrap_dim(int_arg(c.args, 2), c.input(0).dim());
  std::vector<Tensor> grads = piece_grads(c);
  return {grads.size() == 1 ? grads[0] : cat(grads, d)};
}

std::vector<Tensor> unbind_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  if (c.outputs.empty()) return {zeros(self.sizes(), self.dtype())};
  return {stack(piece_grads(c), wrap_dim(int_arg(c.args, 1), self.dim()))};
}

// clang-format off
const OpDef kRows[] = {
  {.name = kCat, .schema = "cat(Tensor[] tensors, int dim=0) -> Tensor",
   .meta = cat_meta, .kernel = cat_kernel, .vjp = cat_vjp, .recompute = Recompute::pointwise},
  {.name = kStack, .schema = "stack(Tensor[] tensors, int dim=0) -> Tensor",
   .meta = stack_meta, .kernel = stack_kernel, .vjp = stack_vjp, .recompute = Recompute::pointwise},
  // ATen writes `Tensor(a -> *) self`; the schema parser reads the alias set without the arrow.
  {.name = kSplit, .schema = "split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
   .meta = split_meta, .kernel = views_kernel<split_meta>, .vjp = split_vjp,
   .recompute = Recompute::view},
  {.name = kSplitWithSizes,
   .schema = "split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]",
   .meta = split_with_sizes_meta, .kernel = views_kernel<split_with_sizes_meta>, .vjp = split_vjp,
   .recompute = Recompute::view},
  {.name = "aten.unsafe_split.Tensor",
   .schema = "unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
   .meta = fresh_pieces_meta<split_meta>, .kernel = copies_kernel<split_meta>, .vjp = split_vjp,
   .recompute = Recompute::pointwise},
  {.name = "aten.unsafe_split_with_sizes.default",
   .schema = "unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
   .meta = fresh_pieces_meta<split_with_sizes_meta>,
   .kernel = copies_kernel<split_with_sizes_meta>, .vjp = split_vjp,
   .recompute = Recompute::pointwise},
  {.name = kUnbind, .schema = "unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]",
   .meta = unbind_meta, .kernel = views_kernel<unbind_meta>, .vjp = unbind_vjp,
   .recompute = Recompute::view},
  {.name = kChunk, .schema = "chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]",
   .meta = chunk_meta, .kernel = views_kernel<chunk_meta>, .vjp = split_vjp,
   .recompute = Recompute::view},
};
// clang-format on

std::vector<Tensor> split_call(std::string_view name, OpArgs args) {
  return dispatch(lookup(name), std::move(args));
}

}  // namespace

std::span<const OpDef> joining_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  static const ops::OpDef& def = ops::lookup("aten.cat.default");
  return ops::call1(def, {ops::TensorList(tensors), dim});
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  static const ops::OpDef& def = ops::lookup("aten.stack.default");
  return ops::call1(def, {ops::TensorList(tensors), dim});
}

std::vector<Tensor> split(const Tensor& a, int64_t split_size, int64_t dim) {
  return ops::split_call(ops::kSplit, {a, split_size, dim});
}

std::vector<Tensor> split_with_sizes(const Tensor& a, const IntList& split_sizes, int64_t dim) {
  return ops::split_call(ops::kSplitWithSizes, {a, split_sizes, dim});
}

std::vector<Tensor> unsafe_split(const Tensor& a, int64_t split_size, int64_t dim) {
  return ops::split_call("aten.unsafe_split.Tensor", {a, split_size, dim});
}

std::vector<Tensor> unbind(const Tensor& a, int64_t dim) {
  return ops::split_call(ops::kUnbind, {a, dim});
}

std::vector<Tensor> chunk(const Tensor& a, int64_t chunks, int64_t dim) {
  return ops::split_call(ops::kChunk, {a, chunks, dim});
}

}  // namespace aotgrad
