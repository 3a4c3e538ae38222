// The indexing family: gathers and scatters through i64 (or i32) index tensors (index_select,
// gather, scatter_add, index_add), embedding and its backward, masked_fill, tril / triu.
//
// Reading guide: meta functions check what metadata can tell (index dtype and rank, matching
// shapes); the kernels check index values (kernels/indexing.h). The VJPs are PyTorch's
// derivatives.yaml formulas, so each gather's backward is the matching scatter and vice versa:
//   index_select <-> index_add,  gather <-> scatter_add,  embedding -> embedding_dense_backward.
// Index arguments take no gradient but their values are read by the VJP, hence `.saves`.
// As in ATen, a 0-dim self or index counts as a 1-D tensor of one element for the rank checks.
#include "aotgrad/indexing.h"

#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "kernels/indexing.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"
#include "tensor/iter.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kIndexSelect = "aten.index_select.default";
constexpr std::string_view kGather = "aten.gather.default";
constexpr std::string_view kScatterAdd = "aten.scatter_add.default";
constexpr std::string_view kIndexAdd = "aten.index_add.default";
constexpr std::string_view kEmbedding = "aten.embedding.default";
constexpr std::string_view kEmbeddingBackward = "aten.embedding_dense_backward.default";
constexpr std::string_view kMaskedFillScalar = "aten.masked_fill.Scalar";
constexpr std::string_view kMaskedFillTensor = "aten.masked_fill.Tensor";
constexpr std::string_view kTril = "aten.tril.default";
constexpr std::string_view kTriu = "aten.triu.default";

// Rank and sizes with a 0-dim tensor read as [1].
int64_t rank1(const Tensor& t) {
  return t.dim() == 0 ? 1 : t.dim();
}
int64_t size1(const Tensor& t, int64_t d) {
  return t.dim() == 0 ? 1 : t.sizes()[d];
}

// As in PyTorch (1.13 and 2.x), index_select, index_add and embedding (and its backward) take
// i32 indices as well as i64; gather and scatter_add take i64 only (allow_i32 = false).
void check_index(std::string_view op, const char* name, const Tensor& index, bool vector,
                 bool allow_i32) {
  if (index.dtype() != DType::i64 && !(allow_i32 && index.dtype() == DType::i32))
    fail(op, std::string("argument '") + name + "' must be an i64 tensor" +
                 (allow_i32 ? " (or i32)" : "") + ", got " +
                 std::string(dtype_name(index.dtype())) + "; convert it with .to(DType::i64)");
  if (vector && index.dim() > 1)
    fail(op, std::string("argument '") + name + "' must be 0-D or 1-D, got shape " +
                 shape_to_string(index.sizes()) + "; flatten it with reshape({-1})");
}

void check_same_dtype(std::string_view op, const Tensor& self, const char* name, const Tensor& t) {
  if (t.dtype() != self.dtype())
    fail(op, std::string("argument '") + name + "' has dtype " +
                 std::string(dtype_name(t.dtype())) + " but self has " +
                 std::string(dtype_name(self.dtype())) + "; they must match (convert with .to())");
}

IntList broadcast_with_mask(std::string_view op, const Tensor& self, const Tensor& mask) {
  if (mask.dtype() != DType::b8)
    fail(op, "mask must be a b8 (bool) tensor, got " + std::string(dtype_name(mask.dtype())) +
                 "; build it with a comparison (eq, gt, lt) or convert with .to(DType::b8)");
  try {
    return broadcast_shapes(self.sizes(), mask.sizes());
  } catch (const std::invalid_argument&) {
    fail(op, "self " + shape_to_string(self.sizes()) + " and mask " +
                 shape_to_string(mask.sizes()) +
                 " do not broadcast; make each trailing size equal or 1");
  }
}

// ---- index_select / index_add ----

std::vector<TensorMeta> index_select_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &index = tensor_arg(a, 2);
  check_index(kIndexSelect, "index", index, /*vector=*/true, /*allow_i32=*/true);
  const int64_t d = dim_arg(kIndexSelect, int_arg(a, 1), rank1(self));
  if (self.dim() == 0) {
    if (index.numel() != 1)
      fail(kIndexSelect,
           "a 0-dim self takes exactly one index, got " + std::to_string(index.numel()));
    return {TensorMeta::contiguous({}, self.dtype())};
  }
  IntList sizes = self.sizes();
  sizes[d] = index.numel();
  return {TensorMeta::contiguous(sizes, self.dtype())};
}

std::vector<Tensor> index_select_kernel(const OpArgs& a) {
  index_select_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::index_select(kIndexSelect, self, wrap_dim(int_arg(a, 1), rank1(self)),
                                tensor_arg(a, 2))};
}

std::vector<Tensor> index_select_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor(), Tensor()};
  const Tensor& g = c.grad();
  return {index_add(zeros(c.input(0).sizes(), g.dtype()), int_arg(c.args, 1), c.input(2), g),
          Tensor()};
}

std::vector<TensorMeta> index_add_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &index = tensor_arg(a, 2), &source = tensor_arg(a, 3);
  check_index(kIndexAdd, "index", index, /*vector=*/true, /*allow_i32=*/true);
  check_same_dtype(kIndexAdd, self, "source", source);
  const int64_t d = dim_arg(kIndexAdd, int_arg(a, 1), rank1(self));
  IntList expected = self.dim() == 0 ? IntList{1} : self.sizes();
  expected[d] = index.numel();
  const bool same = source.dim() == 0 ? expected == IntList{1} : source.sizes() == expected;
  if (!same)
    fail(kIndexAdd, "source has shape " + shape_to_string(source.sizes()) + ", expected " +
                        shape_to_string(expected) + " (self's shape " +
                        shape_to_string(self.sizes()) + " with dim " + std::to_string(d) +
                        " replaced by the " + std::to_string(index.numel()) + " indices)");
  if (scalar_arg(a, 4).is_floating() && !is_floating(self.dtype()))
    fail(kIndexAdd, "alpha must not be a floating point number for an integral or bool self (" +
                        std::string(dtype_name(self.dtype())) + ")");
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

std::vector<Tensor> index_add_kernel(const OpArgs& a) {
  index_add_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::index_add(kIndexAdd, self, wrap_dim(int_arg(a, 1), rank1(self)),
                             tensor_arg(a, 2), tensor_arg(a, 3), scalar_arg(a, 4))};
}

std::vector<Tensor> index_add_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  Tensor g_source;
  if (c.needs(2)) {
    const Scalar alpha = scalar_arg(c.args, 4);
    g_source = index_select(g, int_arg(c.args, 1), c.input(2));
    if (alpha.to_double() != 1.0) g_source = mul(g_source, alpha);
    // A 0-dim self with a [1] source (or the reverse) differ only in rank.
    if (g_source.sizes() != c.input(3).sizes()) g_source = reshape(g_source, c.input(3).sizes());
  }
  return {c.needs(0) ? g : Tensor(), Tensor(), g_source};
}

// ---- gather / scatter_add ----

// index has self's rank and fits inside `bound` on every dim (except `skip`, when >= 0).
void check_fits(std::string_view op, const Tensor& index, const char* name, const Tensor& bound,
                int64_t skip) {
  if (rank1(index) != rank1(bound))
    fail(op, "index " + shape_to_string(index.sizes()) + " must have as many dims as " + name +
                 " " + shape_to_string(bound.sizes()));
  for (int64_t d = 0; d < rank1(index); ++d)
    if (d != skip && size1(index, d) > size1(bound, d))
      fail(op, "index " + shape_to_string(index.sizes()) + " is larger than " + name + " " +
                   shape_to_string(bound.sizes()) + " at dimension " + std::to_string(d) +
                   (skip >= 0 ? " (only dimension " + std::to_string(skip) + " may be larger)"
                              : std::string()));
}

std::vector<TensorMeta> gather_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &index = tensor_arg(a, 2);
  check_index(kGather, "index", index, /*vector=*/false, /*allow_i32=*/false);
  const int64_t d = dim_arg(kGather, int_arg(a, 1), rank1(self));
  if (bool_arg(a, 3)) fail(kGather, "sparse gradients are not supported; pass sparse_grad=false");
  check_fits(kGather, index, "self", self, d);
  return {TensorMeta::contiguous(index.sizes(), self.dtype())};
}

std::vector<Tensor> gather_kernel(const OpArgs& a) {
  gather_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::gather(kGather, self, wrap_dim(int_arg(a, 1), rank1(self)), tensor_arg(a, 2))};
}

std::vector<Tensor> gather_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor(), Tensor()};
  const Tensor& g = c.grad();
  return {scatter_add(zeros(c.input(0).sizes(), g.dtype()), int_arg(c.args, 1), c.input(2), g),
          Tensor()};
}

std::vector<TensorMeta> scatter_add_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &index = tensor_arg(a, 2), &src = tensor_arg(a, 3);
  check_index(kScatterAdd, "index", index, /*vector=*/false, /*allow_i32=*/false);
  check_same_dtype(kScatterAdd, self, "src", src);
  const int64_t d = dim_arg(kScatterAdd, int_arg(a, 1), rank1(self));
  if (index.numel() > 0) {
    check_fits(kScatterAdd, index, "self", self, d);
    check_fits(kScatterAdd, index, "src", src, -1);
  }
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

std::vector<Tensor> scatter_add_kernel(const OpArgs& a) {
  scatter_add_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::scatter_add(kScatterAdd, self, wrap_dim(int_arg(a, 1), rank1(self)),
                               tensor_arg(a, 2), tensor_arg(a, 3))};
}

std::vector<Tensor> scatter_add_vjp(const VjpContext& c) {
  Tensor g_src;
  if (c.needs(2)) {
    const Tensor& src = c.input(3);
    g_src = gather(c.grad(), int_arg(c.args, 1), c.input(2));
    // Elements of src beyond index's extent were never added: their gradient is zero.
    for (int64_t d = 0; d < src.dim(); ++d)
      if (g_src.sizes()[d] != src.sizes()[d]) {
        IntList rest = g_src.sizes();
        rest[d] = src.sizes()[d] - rest[d];
        g_src = cat({g_src, zeros(rest, g_src.dtype())}, d);
      }
  }
  return {c.needs(0) ? c.grad() : Tensor(), Tensor(), g_src};
}

// ---- embedding ----

std::vector<TensorMeta> embedding_meta(const OpArgs& a) {
  const Tensor &weight = tensor_arg(a, 0), &indices = tensor_arg(a, 1);
  if (weight.dim() != 2)
    fail(kEmbedding, "weight must be 2-D [num_embeddings, embedding_dim], got shape " +
                         shape_to_string(weight.sizes()));
  check_index(kEmbedding, "indices", indices, /*vector=*/false, /*allow_i32=*/true);
  if (bool_arg(a, 4)) fail(kEmbedding, "sparse gradients are not supported; pass sparse=false");
  IntList sizes = indices.sizes();
  sizes.push_back(weight.sizes()[1]);
  return {TensorMeta::contiguous(sizes, weight.dtype())};
}

std::vector<Tensor> embedding_kernel(const OpArgs& a) {
  embedding_meta(a);
  return {kernels::embedding(kEmbedding, tensor_arg(a, 0), tensor_arg(a, 1))};
}

std::vector<Tensor> embedding_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor(), Tensor()};
  return {embedding_dense_backward(c.grad(), c.input(1), c.input(0).sizes()[0], int_arg(c.args, 2),
                                   bool_arg(c.args, 3)),
          Tensor()};
}

std::vector<TensorMeta> embedding_backward_meta(const OpArgs& a) {
  const Tensor &grad = tensor_arg(a, 0), &indices = tensor_arg(a, 1);
  if (!is_floating(grad.dtype()))
    fail(kEmbeddingBackward,
         "grad_output must be floating, got " + std::string(dtype_name(grad.dtype())));
  check_index(kEmbeddingBackward, "indices", indices, /*vector=*/false, /*allow_i32=*/true);
  IntList expected = indices.sizes();
  if (grad.dim() == 0 || IntList(grad.sizes().begin(), grad.sizes().end() - 1) != expected)
    fail(kEmbeddingBackward, "grad_output has shape " + shape_to_string(grad.sizes()) +
                                 ", expected the indices' shape " + shape_to_string(expected) +
                                 " followed by the embedding dim");
  const int64_t num_weights = int_arg(a, 2);
  if (num_weights < 0)
    fail(kEmbeddingBackward, "num_weights must be >= 0, got " + std::to_string(num_weights));
  return {TensorMeta::contiguous({num_weights, grad.sizes().back()}, grad.dtype())};
}

std::vector<Tensor> embedding_backward_kernel(const OpArgs& a) {
  embedding_backward_meta(a);
  return {kernels::embedding_dense_backward(kEmbeddingBackward, tensor_arg(a, 0), tensor_arg(a, 1),
                                            int_arg(a, 2), int_arg(a, 3), bool_arg(a, 4))};
}

// embedding_dense_backward is linear in grad_output; its adjoint reads each position's row of
// the incoming gradient, drops padding rows and undoes the frequency scaling.
std::vector<Tensor> embedding_backward_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor(), Tensor()};
  const Tensor& indices = c.input(1);
  const int64_t num_weights = int_arg(c.args, 2), padding_idx = int_arg(c.args, 3);
  Tensor g = embedding(c.grad(), indices);
  if (padding_idx >= 0) g = masked_fill(g, unsqueeze(eq(indices, padding_idx), -1), 0);
  if (bool_arg(c.args, 4)) {
    IntList one_per_index = indices.sizes();
    one_per_index.push_back(1);
    Tensor counts =
        embedding_dense_backward(ones(one_per_index, g.dtype()), indices, num_weights, -1, false);
    g = div(g, embedding(counts, indices));
  }
  return {g, Tensor()};
}

// ---- masked_fill ----

std::vector<TensorMeta> masked_fill_scalar_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(broadcast_with_mask(kMaskedFillScalar, self, tensor_arg(a, 1)),
                                 self.dtype())};
}

std::vector<Tensor> masked_fill_scalar_kernel(const OpArgs& a) {
  masked_fill_scalar_meta(a);
  return {kernels::masked_fill(tensor_arg(a, 0), tensor_arg(a, 1), scalar_arg(a, 2))};
}

std::vector<TensorMeta> masked_fill_tensor_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &value = tensor_arg(a, 2);
  if (value.dim() != 0)
    fail(kMaskedFillTensor, "value must be a 0-dim tensor, got shape " +
                                shape_to_string(value.sizes()) +
                                "; for an elementwise choice use where(mask, value, self)");
  return {TensorMeta::contiguous(broadcast_with_mask(kMaskedFillTensor, self, tensor_arg(a, 1)),
                                 self.dtype())};
}

std::vector<Tensor> masked_fill_tensor_kernel(const OpArgs& a) {
  masked_fill_tensor_meta(a);
  return {kernels::masked_fill(tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2))};
}

// self's gradient flows where the mask is false, summed back over dims the mask broadcast.
Tensor masked_self_grad(const VjpContext& c) {
  Tensor g = masked_fill(c.grad(), c.input(1), 0);
  return g.sizes() == c.input(0).sizes() ? g : sum_to_size(g, c.input(0).sizes());
}

std::vector<Tensor> masked_fill_scalar_vjp(const VjpContext& c) {
  return {c.needs(0) ? masked_self_grad(c) : Tensor(), Tensor()};
}

std::vector<Tensor> masked_fill_tensor_vjp(const VjpContext& c) {
  Tensor g_value;
  if (c.needs(2)) {
    const Tensor& g = c.grad();
    g_value = sum(where(c.input(1), g, zeros({}, g.dtype())));
    if (g_value.dtype() != c.input(2).dtype()) g_value = to(g_value, c.input(2).dtype());
  }
  return {c.needs(0) ? masked_self_grad(c) : Tensor(), Tensor(), g_value};
}

// ---- tril / triu ----

template <const std::string_view* kName>
std::vector<TensorMeta> triangle_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() < 2)
    fail(*kName, "input must have at least 2 dimensions (a matrix or a batch of them), got shape " +
                     shape_to_string(self.sizes()));
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

template <const std::string_view* kName, bool kLower>
std::vector<Tensor> triangle_kernel(const OpArgs& a) {
  triangle_meta<kName>(a);
  return {kernels::tril_triu(tensor_arg(a, 0), int_arg(a, 1), kLower)};
}

std::vector<Tensor> tril_vjp(const VjpContext& c) {
  return {c.needs(0) ? tril(c.grad(), int_arg(c.args, 1)) : Tensor()};
}

std::vector<Tensor> triu_vjp(const VjpContext& c) {
  return {c.needs(0) ? triu(c.grad(), int_arg(c.args, 1)) : Tensor()};
}

// clang-format off
const OpDef kRows[] = {
  {.name = kIndexSelect, .schema = "index_select(Tensor self, int dim, Tensor index) -> Tensor",
   .meta = index_select_meta, .kernel = index_select_kernel, .vjp = index_select_vjp,
   .saves = {.inputs = bit(2)}, .recompute = Recompute::pointwise},
  {.name = kIndexAdd,
   .schema = "index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1) -> Tensor",
   .meta = index_add_meta, .kernel = index_add_kernel, .vjp = index_add_vjp,
   // index is read by source's gradient only (derivatives.yaml: self: grad).
   .saves = {.inputs = bit(2), .read_by = {0, 0, bit(3)}}, .recompute = Recompute::reduction},
  {.name = kGather,
   .schema = "gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor",
   .meta = gather_meta, .kernel = gather_kernel, .vjp = gather_vjp,
   .saves = {.inputs = bit(2)}, .recompute = Recompute::pointwise},
  {.name = kScatterAdd,
   .schema = "scatter_add(Tensor self, int dim, Tensor index, Tensor src) -> Tensor",
   .meta = scatter_add_meta, .kernel = scatter_add_kernel, .vjp = scatter_add_vjp,
   // index is read by src's gradient only (derivatives.yaml: self: grad).
   .saves = {.inputs = bit(2), .read_by = {0, 0, bit(3)}}, .recompute = Recompute::reduction},
  {.name = kEmbedding,
   .schema = "embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, "
             "bool scale_grad_by_freq=False, bool sparse=False) -> Tensor",
   .meta = embedding_meta, .kernel = embedding_kernel, .vjp = embedding_vjp,
   .saves = {.inputs = bit(1)}, .recompute = Recompute::pointwise},
  {.name = kEmbeddingBackward,
   .schema = "embedding_dense_backward(Tensor grad_output, Tensor indices, SymInt num_weights, "
             "int padding_idx, bool scale_grad_by_freq) -> Tensor",
   .meta = embedding_backward_meta, .kernel = embedding_backward_kernel,
   .vjp = embedding_backward_vjp, .saves = {.inputs = bit(1)}, .recompute = Recompute::reduction},
  {.name = kMaskedFillScalar,
   .schema = "masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor",
   .meta = masked_fill_scalar_meta, .kernel = masked_fill_scalar_kernel,
   .vjp = masked_fill_scalar_vjp, .saves = {.inputs = bit(1)}, .recompute = Recompute::pointwise,
   .fusion_expr = "b ? s0 : a"},
  {.name = kMaskedFillTensor,
   .schema = "masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor",
   .meta = masked_fill_tensor_meta, .kernel = masked_fill_tensor_kernel,
   .vjp = masked_fill_tensor_vjp, .saves = {.inputs = bit(1)}, .recompute = Recompute::pointwise,
   .fusion_expr = "b ? c : a"},
  {.name = kTril, .schema = "tril(Tensor self, int diagonal=0) -> Tensor",
   .meta = triangle_meta<&kTril>, .kernel = triangle_kernel<&kTril, true>, .vjp = tril_vjp,
   .recompute = Recompute::pointwise},
  {.name = kTriu, .schema = "triu(Tensor self, int diagonal=0) -> Tensor",
   .meta = triangle_meta<&kTriu>, .kernel = triangle_kernel<&kTriu, false>, .vjp = triu_vjp,
   .recompute = Recompute::pointwise},
};
// clang-format on

}  // namespace

std::span<const OpDef> indexing_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor index_select(const Tensor& a, int64_t dim, const Tensor& index) {
  static const ops::OpDef& def = ops::lookup("aten.index_select.default");
  return ops::call1(def, {a, dim, index});
}

Tensor gather(const Tensor& a, int64_t dim, const Tensor& index) {
  static const ops::OpDef& def = ops::lookup("aten.gather.default");
  return ops::call1(def, {a, dim, index});
}

Tensor scatter_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& src) {
  static const ops::OpDef& def = ops::lookup("aten.scatter_add.default");
  return ops::call1(def, {a, dim, index, src});
}

Tensor index_add(const Tensor& a, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  static const ops::OpDef& def = ops::lookup("aten.index_add.default");
  return ops::call1(def, {a, dim, index, source, alpha});
}

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx,
                 bool scale_grad_by_freq) {
  static const ops::OpDef& def = ops::lookup("aten.embedding.default");
  return ops::call1(def, {weight, indices, padding_idx, scale_grad_by_freq});
}

Tensor embedding_dense_backward(const Tensor& grad, const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq) {
  static const ops::OpDef& def = ops::lookup("aten.embedding_dense_backward.default");
  return ops::call1(def, {grad, indices, num_weights, padding_idx, scale_grad_by_freq});
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, const Scalar& value) {
  static const ops::OpDef& def = ops::lookup("aten.masked_fill.Scalar");
  return ops::call1(def, {a, mask, value});
}

Tensor masked_fill(const Tensor& a, const Tensor& mask, const Tensor& value) {
  static const ops::OpDef& def = ops::lookup("aten.masked_fill.Tensor");
  return ops::call1(def, {a, mask, value});
}

Tensor tril(const Tensor& a, int64_t diagonal) {
  static const ops::OpDef& def = ops::lookup("aten.tril.default");
  return ops::call1(def, {a, diagonal});
}

Tensor triu(const Tensor& a, int64_t diagonal) {
  static const ops::OpDef& def = ops::lookup("aten.triu.default");
  return ops::call1(def, {a, diagonal});
}

}  // namespace aotgrad
