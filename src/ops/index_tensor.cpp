// PyTorch's advanced indexing rows: index.Tensor (`self[indices]`), index_put
// (`self[indices] = values` on a copy) and its in-place form index_put_. `indices` is a
// `Tensor?[]`: per leading dim of self, None or an i64 (i32) / b8 (u8) index tensor
// (kernels/index_tensor.h has the shape rules).
//
// Reading guide: the meta functions compute shapes from index *shapes*, which works for i64
// indices; a b8 mask's result shape depends on its values, so a mask is refused while tracing
// (fake tensors) and handled eagerly. The VJPs are derivatives.yaml's: index's gradient is
// index_put(zeros, indices, grad, accumulate=True); index_put passes grad to self (zeroed where it
// wrote, unless it accumulated) and grad[indices], summed to values' shape, to values. Index
// tensors take no gradient, and their values are read by the VJPs, hence `.saves`.
#include "kernels/index_tensor.h"

#include <string>

#include "aotgrad/indexing.h"
#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kIndex = "aten.index.Tensor";
constexpr std::string_view kIndexPut = "aten.index_put.default";
constexpr std::string_view kIndexPut_ = "aten.index_put_.default";

// Checks the index dtypes; true when a mask is among them. As in PyTorch, a mask is b8, or u8
// (PyTorch's deprecated byte mask), and positions are i64, or i32 as PyTorch 2 takes them (1.13
// refused them); the kernel widens i32 positions.
bool check_indices(std::string_view op, const TensorList& indices) {
  bool mask = false;
  for (const Tensor& t : indices) {
    if (!t.defined()) continue;
    const bool is_mask = t.dtype() == DType::b8 || t.dtype() == DType::u8;
    if (t.dtype() != DType::i64 && t.dtype() != DType::i32 && !is_mask)
      fail(op, "tensors used as indices must be i64 or b8 (bool) tensors (or i32, u8), got " +
                   std::string(dtype_name(t.dtype())) + "; convert them with .to(DType::i64)");
    mask = mask || is_mask;
    if (is_mask && t.is_fake())
      fail(op,
           "a bool mask index gives a result whose shape depends on the mask's values, "
           "which a traced graph cannot hold; use where() or masked_fill(), or index with "
           "i64 positions");
  }
  return mask;
}

// The shape of self[indices] for i64 indices.
IntList result_sizes(std::string_view op, const Tensor& self, const TensorList& indices) {
  std::vector<const IntList*> sizes;
  for (const Tensor& t : indices) sizes.push_back(t.defined() ? &t.sizes() : nullptr);
  return kernels::index_result_sizes(op, self.sizes(), sizes);
}

std::vector<TensorMeta> index_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const TensorList& indices = tensor_list_arg(a, 1);
  if (check_indices(kIndex, indices))  // a real mask: the shape is the kernel's
    return {TensorMeta::contiguous(kernels::index(kIndex, self, indices).sizes(), self.dtype())};
  return {TensorMeta::contiguous(result_sizes(kIndex, self, indices), self.dtype())};
}

std::vector<Tensor> index_kernel(const OpArgs& a) {
  check_indices(kIndex, tensor_list_arg(a, 1));
  return {kernels::index(kIndex, tensor_arg(a, 0), tensor_list_arg(a, 1))};
}

std::vector<Tensor> no_index_grads(Tensor first, const OpArgs& a) {
  std::vector<Tensor> out{std::move(first)};
  out.resize(1 + tensor_list_arg(a, 1).size());
  return out;
}

std::vector<Tensor> index_vjp(const VjpContext& c) {
  if (!c.needs(0)) return no_index_grads(Tensor(), c.args);
  const Tensor& g = c.grad();
  return no_index_grads(
      index_put(zeros(c.input(0).sizes(), g.dtype()), tensor_list_arg(c.args, 1), g, true), c.args);
}

template <const std::string_view* kName>
std::vector<TensorMeta> index_put_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &values = tensor_arg(a, 2);
  const TensorList& indices = tensor_list_arg(a, 1);
  if (values.dtype() != self.dtype())
    fail(*kName, "values have dtype " + std::string(dtype_name(values.dtype())) + " but self has " +
                     std::string(dtype_name(self.dtype())) +
                     "; they must match (convert with .to())");
  if (!check_indices(*kName, indices)) {
    const IntList shape = result_sizes(*kName, self, indices);
    bool fits = values.dim() <= static_cast<int64_t>(shape.size());
    for (int64_t d = 0; fits && d < values.dim(); ++d) {
      const int64_t s = values.sizes()[values.dim() - 1 - d];
      fits = s == 1 || s == shape[shape.size() - 1 - d];
    }
    if (!fits)
      fail(*kName, "shape mismatch: value tensor of shape " + shape_to_string(values.sizes()) +
                       " cannot be broadcast to indexing result of shape " +
                       shape_to_string(shape));
  }
  if (kName == &kIndexPut_)
    return {{self.dtype(), self.sizes(), self.strides(), self.storage_offset()}};
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

std::vector<Tensor> index_put_kernel(const OpArgs& a) {
  index_put_meta<&kIndexPut>(a);
  return {kernels::index_put(kIndexPut, tensor_arg(a, 0), tensor_list_arg(a, 1), tensor_arg(a, 2),
                             bool_arg(a, 3))};
}

std::vector<Tensor> index_put__kernel(const OpArgs& a) {
  index_put_meta<&kIndexPut_>(a);
  const Tensor& self = tensor_arg(a, 0);
  kernels::copy_into(self, kernels::index_put(kIndexPut_, self, tensor_list_arg(a, 1),
                                              tensor_arg(a, 2), bool_arg(a, 3)));
  return {self};
}

std::vector<Tensor> index_put_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  const TensorList& indices = tensor_list_arg(c.args, 1);
  Tensor g_self;
  if (c.needs(0))
    g_self = bool_arg(c.args, 3) ? g : index_put(g, indices, zeros({}, g.dtype()), false);
  std::vector<Tensor> out = no_index_grads(std::move(g_self), c.args);
  Tensor g_values;
  if (c.needs(out.size())) {
    g_values = index(g, indices);
    if (g_values.sizes() != c.input(2).sizes())
      g_values = sum_to_size(g_values, c.input(2).sizes());
  }
  out.push_back(std::move(g_values));
  return out;
}

// clang-format off
const OpDef kRows[] = {
  {.name = kIndex, .schema = "index.Tensor(Tensor self, Tensor?[] indices) -> Tensor",
   .meta = index_meta, .kernel = index_kernel, .vjp = index_vjp,
   .saves = {.inputs = bit(1)}, .recompute = Recompute::pointwise},
  {.name = kIndexPut,
   .schema = "index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor",
   .meta = index_put_meta<&kIndexPut>, .kernel = index_put_kernel, .vjp = index_put_vjp,
   .saves = {.inputs = bit(1)}, .recompute = Recompute::reduction},
  {.name = kIndexPut_,
   .schema = "index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False) -> Tensor(a!)",
   .meta = index_put_meta<&kIndexPut_>, .kernel = index_put__kernel, .vjp = index_put_vjp,
   .saves = {.inputs = bit(1)}, .recompute = Recompute::effectful,
   .functional_variant = kIndexPut},
};
// clang-format on

}  // namespace

std::span<const OpDef> advanced_indexing_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor index(const Tensor& a, const std::vector<Tensor>& indices) {
  static const ops::OpDef& def = ops::lookup(ops::kIndex);
  return ops::call1(def, {a, indices});
}

Tensor index_put(const Tensor& a, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate) {
  static const ops::OpDef& def = ops::lookup(ops::kIndexPut);
  return ops::call1(def, {a, indices, values, accumulate});
}

Tensor& index_put_(Tensor& a, const std::vector<Tensor>& indices, const Tensor& values,
                   bool accumulate) {
  static const ops::OpDef& def = ops::lookup(ops::kIndexPut_);
  ops::call1(def, {a, indices, values, accumulate});
  return a;
}

}  // namespace aotgrad
