// Reduction rows: sum, mean, amax; and the sum_to_size composite that broadcasting VJPs use.
//
// Dim lists follow ATen: negative dims wrap, duplicates are an error, and an empty list or None
// means "every dim". A 0-dim tensor accepts dim 0 / -1 and reduces nothing.
#include "kernels/reduction.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "ops/families.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

IntList all_dims(const Tensor& a) {
  IntList dims;
  for (int64_t d = 0; d < a.dim(); ++d) dims.push_back(d);
  return dims;
}

// The wrapped, sorted dims to reduce; `arg` is the dim list argument (None or empty = all).
IntList reduce_dims(const char* op, const Tensor& a, const OpArgs& args, size_t arg) {
  IntList dims;
  if (!is_none(args, arg)) dims = int_list_arg(args, arg);
  if (dims.empty()) return all_dims(a);
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(a.dim(), 1)), false);
  IntList out;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, a.dim(), (std::string(op) + ": dim").c_str());
    if (seen[static_cast<size_t>(w)])
      throw std::invalid_argument(std::string(op) + ": dim " + std::to_string(w) +
                                  " appears multiple times in the list of dims");
    seen[static_cast<size_t>(w)] = true;
    if (a.dim() > 0) out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

DType sum_dtype(const Tensor& a, const OpArgs& args, size_t dtype_arg_index) {
  if (!is_none(args, dtype_arg_index)) return dtype_arg(args, dtype_arg_index);
  return is_floating(a.dtype()) ? a.dtype() : DType::i64;  // ints and bools sum as i64
}

DType mean_dtype(const char* op, const Tensor& a, const OpArgs& args, size_t dtype_arg_index) {
  const bool given = !is_none(args, dtype_arg_index);
  DType d = given ? dtype_arg(args, dtype_arg_index) : a.dtype();
  if (!is_floating(d))
    throw std::invalid_argument(std::string(op) + ": needs a floating result dtype, but " +
                                (given ? "dtype=" : "the input's dtype is ") +
                                std::string(dtype_name(d)) +
                                "; convert the input with .to(f32) or pass a floating dtype");
  return d;
}

// ---- sum ----

std::vector<TensorMeta> sum_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous({}, sum_dtype(self, a, 1))};
}
std::vector<Tensor> sum_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::sum(self, all_dims(self), false, sum_dtype(self, a, 1))};
}
std::vector<Tensor> sum_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {cast_like(expand(c.grad(), c.input(0).sizes()), c.input(0))};
}

std::vector<TensorMeta> sum_dim_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  IntList dims = reduce_dims("sum", self, a, 1);
  return {TensorMeta::contiguous(kernels::reduced_sizes(self.sizes(), dims, bool_arg(a, 2)),
                                 sum_dtype(self, a, 3))};
}
std::vector<Tensor> sum_dim_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {
      kernels::sum(self, reduce_dims("sum", self, a, 1), bool_arg(a, 2), sum_dtype(self, a, 3))};
}
std::vector<Tensor> sum_dim_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  Tensor g =
      restore_reduced_dims(c.grad(), reduce_dims("sum", self, c.args, 1), bool_arg(c.args, 2));
  return {cast_like(expand(g, self.sizes()), self)};
}

// ---- mean ----

std::vector<TensorMeta> mean_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous({}, mean_dtype("mean", self, a, 1))};
}
std::vector<Tensor> mean_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::mean(self, all_dims(self), false, mean_dtype("mean", self, a, 1))};
}
std::vector<Tensor> mean_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  Tensor g = div(c.grad(), Scalar(self.numel()));
  return {cast_like(expand(g, self.sizes()), self)};
}

std::vector<TensorMeta> mean_dim_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  IntList dims = reduce_dims("mean", self, a, 1);
  return {TensorMeta::contiguous(kernels::reduced_sizes(self.sizes(), dims, bool_arg(a, 2)),
                                 mean_dtype("mean", self, a, 3))};
}
std::vector<Tensor> mean_dim_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::mean(self, reduce_dims("mean", self, a, 1), bool_arg(a, 2),
                        mean_dtype("mean", self, a, 3))};
}
std::vector<Tensor> mean_dim_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  IntList dims = reduce_dims("mean", self, c.args, 1);
  int64_t count = 1;
  for (int64_t d : dims) count *= self.size(d);
  Tensor g = restore_reduced_dims(div(c.grad(), Scalar(count)), dims, bool_arg(c.args, 2));
  return {cast_like(expand(g, self.sizes()), self)};
}

// ---- amax ----

IntList amax_dims(const Tensor& self, const OpArgs& a) {
  IntList dims = reduce_dims("amax", self, a, 1);
  for (int64_t d : dims)
    if (self.size(d) == 0)
      throw std::invalid_argument("amax: cannot reduce over dim " + std::to_string(d) +
                                  " of size 0 (input shape " + shape_to_string(self.sizes()) +
                                  "); a maximum of no elements is undefined");
  return dims;
}
std::vector<TensorMeta> amax_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  IntList dims = amax_dims(self, a);
  return {TensorMeta::contiguous(kernels::reduced_sizes(self.sizes(), dims, bool_arg(a, 2)),
                                 self.dtype())};
}
std::vector<Tensor> amax_kernel(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::amax(self, amax_dims(self, a), bool_arg(a, 2))};
}
// Ties share the gradient evenly, as PyTorch's amax backward does:
// grad_in = mask * grad / count(mask), mask = (self == amax).
std::vector<Tensor> amax_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  IntList dims = reduce_dims("amax", self, c.args, 1);
  bool keepdim = bool_arg(c.args, 2);
  Tensor mask = eq(self, restore_reduced_dims(c.output(), dims, keepdim));
  Tensor count = sum(mask, dims, /*keepdim=*/true);
  Tensor g = div(restore_reduced_dims(c.grad(), dims, keepdim), count);
  return {cast_like(mul(g, mask), self)};
}

const OpDef kRows[] = {
    {.name = "aten.sum.default",
     .schema = "sum(Tensor self, *, ScalarType? dtype=None) -> Tensor",
     .meta = sum_meta,
     .kernel = sum_kernel,
     .vjp = sum_vjp,
     .recompute = Recompute::reduction},
    {.name = "aten.sum.dim_IntList",
     .schema = "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, "
               "ScalarType? dtype=None) -> Tensor",
     .meta = sum_dim_meta,
     .kernel = sum_dim_kernel,
     .vjp = sum_dim_vjp,
     .recompute = Recompute::reduction},
    {.name = "aten.mean.default",
     .schema = "mean(Tensor self, *, ScalarType? dtype=None) -> Tensor",
     .meta = mean_meta,
     .kernel = mean_kernel,
     .vjp = mean_vjp,
     .recompute = Recompute::reduction},
    {.name = "aten.mean.dim",
     .schema = "mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, "
               "ScalarType? dtype=None) -> Tensor",
     .meta = mean_dim_meta,
     .kernel = mean_dim_kernel,
     .vjp = mean_dim_vjp,
     .recompute = Recompute::reduction},
    {.name = "aten.amax.default",
     .schema = "amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor",
     .meta = amax_meta,
     .kernel = amax_kernel,
     .vjp = amax_vjp,
     .saves = {.inputs = bit(0), .outputs = bit(0)},
     .recompute = Recompute::reduction},
};

}  // namespace

std::span<const OpDef> reduction_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor sum(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.sum.default");
  return ops::call1(def, {a});
}

Tensor sum(const Tensor& a, const IntList& dims, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.sum.dim_IntList");
  return ops::call1(def, {a, dims, keepdim});
}

Tensor mean(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.mean.default");
  return ops::call1(def, {a});
}

Tensor mean(const Tensor& a, const IntList& dims, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.mean.dim");
  return ops::call1(def, {a, dims, keepdim});
}

Tensor amax(const Tensor& a, const IntList& dims, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.amax.default");
  return ops::call1(def, {a, dims, keepdim});
}

// As ATen's sum_to: sum the leading dims `a` has beyond `sizes`, and every dim where `sizes`
// has 1 but `a` does not, then view the keepdim result as `sizes`.
Tensor sum_to_size(const Tensor& a, const IntList& sizes) {
  if (a.sizes() == sizes) return a;
  const int64_t lead = a.dim() - static_cast<int64_t>(sizes.size());
  auto fail = [&]() {
    return std::invalid_argument("sum_to_size: shape " + shape_to_string(sizes) +
                                 " is not broadcastable to the tensor's shape " +
                                 shape_to_string(a.sizes()) +
                                 "; the target must be a shape that broadcasts to the tensor");
  };
  if (lead < 0) throw fail();
  IntList dims;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d < lead) {
      dims.push_back(d);
      continue;
    }
    int64_t want = sizes[static_cast<size_t>(d - lead)];
    if (want == a.size(d)) continue;
    if (want != 1) throw fail();
    dims.push_back(d);
  }
  // dims is non-empty here (shapes differ), so sum never sees the "empty = all dims" case.
  return view(sum(a, dims, /*keepdim=*/true), sizes);
}

}  // namespace aotgrad
