// The view family: ops whose result shares its input's storage (schema `Tensor(a) self ->
// Tensor(a)`), plus the functional backward ops their VJPs are written with.
//
// Reading guide: every view row's meta computes the result geometry (sizes, strides,
// storage_offset) from the input's metadata alone, and the shared kernel view_kernel<Meta> turns
// that geometry into make_view(input, ...), so eager results share storage and remember _base.
// The VJPs are functional (select_backward, slice_backward, as_strided_scatter build fresh
// tensors), so a traced backward graph holds no mutation. detach and _unsafe_view alias the
// storage without being autograd views (as in PyTorch). Composites at the end: reshape (view when
// the strides allow it, else clone + _unsafe_view), detach.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "kernels/factory.h"
#include "kernels/scatter.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"
#include "ops/view_scatter.h"
#include "tensor/checked_math.h"

namespace aotgrad::ops {
namespace {

TensorMeta geometry(const Tensor& t) {
  return {t.dtype(), t.sizes(), t.strides(), t.storage_offset()};
}

// Wraps a dim for `op`, naming the op in the error.
// ---- view geometry (ATen's infer_size and computeStride) ----

// `shape` with its one -1 replaced so that it holds `numel` elements.
IntList infer_size(std::string_view op, const IntList& shape, int64_t numel) {
  IntList out = shape;
  int64_t known = 1;
  std::optional<size_t> infer;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer) fail(op, "only one dimension of " + shape_to_string(shape) + " can be -1");
      infer = i;
    } else if (shape[i] < 0) {
      fail(op, "invalid size " + std::to_string(shape[i]) + " in shape " + shape_to_string(shape));
    } else {
      known = saturating_mul(known, shape[i]);  // past int64 it cannot match; make_view refuses
    }
  }
  if (infer) {
    if (known == 0)
      fail(op, "cannot infer the -1 in shape " + shape_to_string(shape) +
                   " for a tensor of 0 elements: any size would fit; give it explicitly");
    if (numel % known == 0) {
      out[*infer] = numel / known;
      return out;
    }
  } else if (known == numel) {
    return out;
  }
  fail(op, "shape " + shape_to_string(shape) + " is invalid for input of size " +
               std::to_string(numel));
}

// Strides that let `new_sizes` view memory laid out as (old_sizes, old_strides), or nothing when
// a new dim would have to span two non-contiguous chunks of the old layout.
std::optional<IntList> compute_stride(const IntList& old_sizes, const IntList& old_strides,
                                      const IntList& new_sizes) {
  if (old_sizes.empty()) return IntList(new_sizes.size(), 1);
  const int64_t numel = numel_of(old_sizes);
  if (numel == 0 && old_sizes == new_sizes) return old_strides;
  IntList new_strides(new_sizes.size());
  if (numel == 0) return contiguous_strides(new_sizes);
  int64_t view_d = static_cast<int64_t>(new_sizes.size()) - 1;
  int64_t chunk_base_stride = old_strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t tensor_d = static_cast<int64_t>(old_sizes.size()) - 1; tensor_d >= 0; --tensor_d) {
    tensor_numel *= old_sizes[tensor_d];
    // A chunk ends where the next-outer dim does not continue it contiguously.
    if (tensor_d == 0 || (old_sizes[tensor_d - 1] != 1 &&
                          old_strides[tensor_d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        new_strides[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (tensor_d > 0) {
        chunk_base_stride = old_strides[tensor_d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return new_strides;
}

TensorMeta reshape_view_geometry(std::string_view op, const Tensor& self, const IntList& size) {
  IntList shape = infer_size(op, size, self.numel());
  std::optional<IntList> strides = compute_stride(self.sizes(), self.strides(), shape);
  if (!strides)
    fail(op, "view size " + shape_to_string(shape) + " is not compatible with the input's size " +
                 shape_to_string(self.sizes()) + " and stride " + shape_to_string(self.strides()) +
                 " (at least one dimension spans across two contiguous subspaces). Use "
                 "reshape(...) instead, which copies when a view is impossible.");
  return {self.dtype(), shape, *strides, self.storage_offset()};
}

// Python slicing of [0, size): negative bounds count from the end, then both clamp into range.
struct SliceBounds {
  int64_t start, end, length;
};
SliceBounds slice_bounds(std::string_view op, int64_t size, std::optional<int64_t> start_arg,
                         std::optional<int64_t> end_arg, int64_t step) {
  if (step <= 0) fail(op, "slice step must be positive, got " + std::to_string(step));
  int64_t start = start_arg.value_or(0), end = end_arg.value_or(INT64_MAX);
  if (start < 0) start += size;
  if (end < 0) end += size;
  start = std::clamp<int64_t>(start, 0, size);
  end = std::clamp<int64_t>(end, start, size);
  // Rounds up without end - start + step - 1, which wraps for a huge step.
  return {start, end, (end - start) / step + ((end - start) % step != 0)};
}

std::optional<int64_t> optional_int(const OpArgs& a, size_t i) {
  if (is_none(a, i)) return std::nullopt;
  return int_arg(a, i);
}

// Smallest storage (in elements) that holds every index of (sizes, strides >= 0) from `offset`.
// Huge strides must not wrap into a small extent that passes the bounds checks below: an index
// past int64 throws, naming the op (check_view_geometry; 1-byte elements check the elements).
int64_t storage_extent(const IntList& sizes, const IntList& strides, int64_t offset) {
  check_view_geometry(sizes, strides, offset, DType::b8);
  ReachableOffsets r = *checked_reachable_offsets(sizes, strides, offset);
  return r.empty ? 0 : r.hi + 1;
}

// ---- meta functions of the view rows ----

std::vector<TensorMeta> view_meta(const OpArgs& a) {
  return {reshape_view_geometry("aten.view.default", tensor_arg(a, 0), int_list_arg(a, 1))};
}

std::vector<TensorMeta> unsafe_view_meta(const OpArgs& a) {
  return {reshape_view_geometry("aten._unsafe_view.default", tensor_arg(a, 0), int_list_arg(a, 1))};
}

std::vector<TensorMeta> permute_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.permute.default";
  const Tensor& self = tensor_arg(a, 0);
  const IntList& dims = int_list_arg(a, 1);
  if (static_cast<int64_t>(dims.size()) != self.dim())
    fail(op, "argument 'dims' " + shape_to_string(dims) + " has " + std::to_string(dims.size()) +
                 " entries but the input has " + std::to_string(self.dim()) + " dims");
  TensorMeta m = geometry(self);
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = dim_arg(op, dims[i], self.dim());
    if (seen[d])
      fail(op, "argument 'dims' " + shape_to_string(dims) + " repeats dim " + std::to_string(d) +
                   "; it must be a permutation");
    seen[d] = true;
    m.sizes[i] = self.sizes()[d];
    m.strides[i] = self.strides()[d];
  }
  return {m};
}

std::vector<TensorMeta> transpose_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.transpose.int";
  const Tensor& self = tensor_arg(a, 0);
  TensorMeta m = geometry(self);
  if (self.dim() == 0) return {m};
  int64_t d0 = dim_arg(op, int_arg(a, 1), self.dim()), d1 = dim_arg(op, int_arg(a, 2), self.dim());
  std::swap(m.sizes[d0], m.sizes[d1]);
  std::swap(m.strides[d0], m.strides[d1]);
  return {m};
}

std::vector<TensorMeta> t_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() > 2)
    fail("aten.t.default", "expects a tensor with <= 2 dims, but the input has " +
                               std::to_string(self.dim()) +
                               "; use transpose(dim0, dim1) or permute");
  TensorMeta m = geometry(self);
  std::reverse(m.sizes.begin(), m.sizes.end());
  std::reverse(m.strides.begin(), m.strides.end());
  return {m};
}

std::vector<TensorMeta> expand_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.expand.default";
  const Tensor& self = tensor_arg(a, 0);
  const IntList& size = int_list_arg(a, 1);
  const int64_t ndim = static_cast<int64_t>(size.size()), lead = ndim - self.dim();
  if (lead < 0)
    fail(op, "the number of sizes provided (" + std::to_string(ndim) +
                 ") must be greater or equal to the number of dimensions in the tensor (" +
                 std::to_string(self.dim()) + ")");
  TensorMeta m{self.dtype(), IntList(ndim), IntList(ndim), self.storage_offset()};
  for (int64_t i = ndim - 1; i >= 0; --i) {
    const int64_t d = i - lead;
    int64_t target = size[i];
    int64_t have = d >= 0 ? self.sizes()[d] : 1;
    int64_t stride = d >= 0         ? self.strides()[d]
                     : i + 1 < ndim ? saturating_mul(m.sizes[i + 1], m.strides[i + 1])
                                    : 1;
    if (target == -1) {
      if (d < 0)
        fail(op, "the expanded size -1 is not allowed in the leading, new dimension " +
                     std::to_string(i) + " of " + shape_to_string(size));
      target = have;
    } else if (target < 0) {
      fail(op, "invalid size " + std::to_string(target) + " in " + shape_to_string(size));
    }
    if (have != target) {
      if (have != 1)
        fail(op, "the expanded size of the tensor (" + std::to_string(target) +
                     ") must match the existing size (" + std::to_string(have) +
                     ") at non-singleton dimension " + std::to_string(i) + ". Target sizes: " +
                     shape_to_string(size) + ". Tensor sizes: " + shape_to_string(self.sizes()));
      stride = 0;
    }
    m.sizes[i] = target;
    m.strides[i] = stride;
  }
  return {m};
}

std::vector<TensorMeta> unsqueeze_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  int64_t d = dim_arg("aten.unsqueeze.default", int_arg(a, 1), self.dim() + 1);
  TensorMeta m = geometry(self);
  int64_t stride = d >= self.dim() ? 1 : saturating_mul(self.sizes()[d], self.strides()[d]);
  m.sizes.insert(m.sizes.begin() + d, 1);
  m.strides.insert(m.strides.begin() + d, stride);
  return {m};
}

std::vector<TensorMeta> squeeze_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  int64_t d = dim_arg("aten.squeeze.dim", int_arg(a, 1), self.dim());
  TensorMeta m = geometry(self);
  if (self.dim() > 0 && self.sizes()[d] == 1) {
    m.sizes.erase(m.sizes.begin() + d);
    m.strides.erase(m.strides.begin() + d);
  }
  return {m};
}

std::vector<TensorMeta> slice_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.slice.Tensor";
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() == 0) fail(op, "slice() cannot be applied to a 0-dim tensor");
  int64_t d = dim_arg(op, int_arg(a, 1), self.dim());
  int64_t step = int_arg(a, 4);
  SliceBounds b = slice_bounds(op, self.sizes()[d], optional_int(a, 2), optional_int(a, 3), step);
  TensorMeta m = geometry(self);
  m.storage_offset += b.start * self.strides()[d];
  m.sizes[d] = b.length;
  m.strides[d] = saturating_mul(m.strides[d], step);  // only wraps when at most one step is taken
  return {m};
}

std::vector<TensorMeta> select_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.select.int";
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() == 0) fail(op, "select() cannot be applied to a 0-dim tensor");
  int64_t d = dim_arg(op, int_arg(a, 1), self.dim());
  int64_t index = int_arg(a, 2), size = self.sizes()[d];
  if (index < -size || index >= size)
    fail(op, "index " + std::to_string(index) + " out of range for tensor of size " +
                 shape_to_string(self.sizes()) + " at dimension " + std::to_string(d));
  if (index < 0) index += size;
  TensorMeta m = geometry(self);
  m.storage_offset += index * self.strides()[d];
  m.sizes.erase(m.sizes.begin() + d);
  m.strides.erase(m.strides.begin() + d);
  return {m};
}

std::vector<TensorMeta> as_strided_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.as_strided.default";
  const Tensor& self = tensor_arg(a, 0);
  const IntList& size = int_list_arg(a, 1);
  const IntList& stride = int_list_arg(a, 2);
  int64_t offset = optional_int(a, 3).value_or(self.storage_offset());
  if (size.size() != stride.size())
    fail(op, "argument 'size' " + shape_to_string(size) + " and argument 'stride' " +
                 shape_to_string(stride) + " must have the same length");
  for (size_t d = 0; d < size.size(); ++d) {
    if (size[d] < 0) fail(op, "negative size in " + shape_to_string(size));
    if (stride[d] < 0)
      fail(op, "negative strides are not supported, got stride " + shape_to_string(stride));
  }
  if (offset < 0) fail(op, "negative storage_offset " + std::to_string(offset));
  // A fake storage may not know its true size (tracing checks happen when the graph runs).
  const Storage& st = *self.storage();
  int64_t available = static_cast<int64_t>(st.nbytes() / itemsize(self.dtype()));
  int64_t needed = storage_extent(size, stride, offset);
  if (!st.is_fake() && needed > available)
    fail(op, "size " + shape_to_string(size) + ", stride " + shape_to_string(stride) +
                 " and storage_offset " + std::to_string(offset) + " need a storage of " +
                 std::to_string(needed) + " elements, but the input's storage holds " +
                 std::to_string(available));
  return {TensorMeta{self.dtype(), size, stride, offset}};
}

// _reshape_alias(self, size, stride): what PyTorch 1.13's make_fx records for a reshape that is
// a view. An as_strided at self's own offset that keeps the element count.
OpArgs reshape_alias_as_strided_args(const OpArgs& a) {
  return {a.at(0), a.at(1), a.at(2), tensor_arg(a, 0).storage_offset()};
}

std::vector<TensorMeta> reshape_alias_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten._reshape_alias.default";
  const Tensor& self = tensor_arg(a, 0);
  const IntList& size = int_list_arg(a, 1);
  const IntList& stride = int_list_arg(a, 2);
  if (size.size() != stride.size())
    fail(op, "argument 'size' " + shape_to_string(size) + " and argument 'stride' " +
                 shape_to_string(stride) + " must have the same length");
  if (numel_of(size) != self.numel())
    fail(op, "argument 'size' " + shape_to_string(size) + " holds " +
                 std::to_string(numel_of(size)) + " elements but the input " +
                 shape_to_string(self.sizes()) + " holds " + std::to_string(self.numel()) +
                 "; use a size with the same element count");
  return as_strided_meta(reshape_alias_as_strided_args(a));
}

Tensor view_scatter_reshape_alias(const Tensor& base, const Tensor& updated, const OpArgs& a) {
  return view_scatter_as_strided(base, updated, reshape_alias_as_strided_args(a));
}

std::vector<TensorMeta> same_geometry_meta(const OpArgs& a) {
  return {geometry(tensor_arg(a, 0))};
}

// ---- meta functions of the functional backward rows ----

std::vector<TensorMeta> select_backward_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.select_backward.default";
  const Tensor& grad = tensor_arg(a, 0);
  const IntList& input_sizes = int_list_arg(a, 1);
  int64_t ndim = static_cast<int64_t>(input_sizes.size());
  if (ndim == 0) fail(op, "argument 'input_sizes' must have at least one dim");
  int64_t d = dim_arg(op, int_arg(a, 2), ndim);
  int64_t index = int_arg(a, 3);
  if (index < -input_sizes[d] || index >= input_sizes[d])
    fail(op, "index " + std::to_string(index) + " out of range for size " +
                 std::to_string(input_sizes[d]) + " at dimension " + std::to_string(d));
  IntList expected = input_sizes;
  expected.erase(expected.begin() + d);
  if (grad.sizes() != expected)
    fail(op, "argument 'grad_output' has shape " + shape_to_string(grad.sizes()) + ", expected " +
                 shape_to_string(expected));
  return {TensorMeta::contiguous(input_sizes, grad.dtype())};
}

std::vector<TensorMeta> slice_backward_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.slice_backward.default";
  const Tensor& grad = tensor_arg(a, 0);
  const IntList& input_sizes = int_list_arg(a, 1);
  int64_t ndim = static_cast<int64_t>(input_sizes.size());
  if (ndim == 0) fail(op, "argument 'input_sizes' must have at least one dim");
  int64_t d = dim_arg(op, int_arg(a, 2), ndim);
  SliceBounds b = slice_bounds(op, input_sizes[d], int_arg(a, 3), int_arg(a, 4), int_arg(a, 5));
  IntList expected = input_sizes;
  expected[d] = b.length;
  if (grad.sizes() != expected)
    fail(op, "argument 'grad_output' has shape " + shape_to_string(grad.sizes()) + ", expected " +
                 shape_to_string(expected));
  return {TensorMeta::contiguous(input_sizes, grad.dtype())};
}

// as_strided_scatter(self, src, size, stride, storage_offset): a contiguous copy of self whose
// storage window (size, stride, storage_offset; offset None = 0) holds src. Positions the window
// reaches more than once receive the sum of their src values (kernels/scatter.h), which makes the
// op the adjoint of as_strided. PyTorch computes in a copy of self that keeps self's strides and
// offset; the two agree whenever self is contiguous at offset 0, the only way functionalization
// and the VJP below use it.
std::vector<TensorMeta> as_strided_scatter_meta(const OpArgs& a) {
  constexpr std::string_view op = "aten.as_strided_scatter.default";
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& src = tensor_arg(a, 1);
  const IntList& size = int_list_arg(a, 2);
  const IntList& stride = int_list_arg(a, 3);
  int64_t offset = optional_int(a, 4).value_or(0);
  if (size.size() != stride.size())
    fail(op, "argument 'size' " + shape_to_string(size) + " and argument 'stride' " +
                 shape_to_string(stride) + " must have the same length");
  if (src.sizes() != size)
    fail(op, "argument 'src' has shape " + shape_to_string(src.sizes()) +
                 "; it must equal the window's size " + shape_to_string(size));
  for (int64_t s : stride)
    if (s < 0)
      fail(op, "negative strides are not supported, got stride " + shape_to_string(stride));
  if (offset < 0) fail(op, "negative storage_offset " + std::to_string(offset));
  if (storage_extent(size, stride, offset) > self.numel())
    fail(op, "the window (size " + shape_to_string(size) + ", stride " + shape_to_string(stride) +
                 ", storage_offset " + std::to_string(offset) + ") reaches past the " +
                 std::to_string(self.numel()) + " elements of 'self'");
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

// ---- kernels ----

template <MetaFn Meta>
std::vector<Tensor> view_kernel(const OpArgs& a) {
  TensorMeta m = Meta(a).at(0);
  return {make_view(tensor_arg(a, 0), m.sizes, m.strides, m.storage_offset)};
}

// Shares the storage but records no _base: autograd and the tracer see a fresh tensor.
template <MetaFn Meta>
std::vector<Tensor> untracked_alias_kernel(const OpArgs& a) {
  TensorMeta m = Meta(a).at(0);
  const Tensor& self = tensor_arg(a, 0);
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = m.dtype;
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  impl->storage_offset = m.storage_offset;
  impl->storage = self.storage();
  return {Tensor(std::move(impl))};
}

std::vector<Tensor> select_backward_kernel(const OpArgs& a) {
  select_backward_meta(a);
  const Tensor& grad = tensor_arg(a, 0);
  const IntList& sizes = int_list_arg(a, 1);
  int64_t d = wrap_dim(int_arg(a, 2), static_cast<int64_t>(sizes.size()));
  int64_t index = int_arg(a, 3) < 0 ? int_arg(a, 3) + sizes[d] : int_arg(a, 3);
  Tensor out = kernels::full(sizes, 0, grad.dtype());
  IntList strides = out.strides();
  int64_t offset = index * strides[d];
  strides.erase(strides.begin() + d);
  kernels::scatter_window(out, grad, strides, offset);
  return {out};
}

std::vector<Tensor> slice_backward_kernel(const OpArgs& a) {
  slice_backward_meta(a);
  const Tensor& grad = tensor_arg(a, 0);
  const IntList& sizes = int_list_arg(a, 1);
  int64_t d = wrap_dim(int_arg(a, 2), static_cast<int64_t>(sizes.size()));
  int64_t step = int_arg(a, 5);
  SliceBounds b =
      slice_bounds("aten.slice_backward.default", sizes[d], int_arg(a, 3), int_arg(a, 4), step);
  Tensor out = kernels::full(sizes, 0, grad.dtype());
  IntList strides = out.strides();
  int64_t offset = b.start * strides[d];
  strides[d] *= step;
  kernels::scatter_window(out, grad, strides, offset);
  return {out};
}

std::vector<Tensor> as_strided_scatter_kernel(const OpArgs& a) {
  as_strided_scatter_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  Tensor out = kernels::contiguous_copy(self, self.dtype());
  kernels::scatter_window(out, tensor_arg(a, 1), int_list_arg(a, 3),
                          optional_int(a, 4).value_or(0));
  return {out};
}

// ---- the functional backward ops, callable from VJPs ----

Tensor select_backward(const Tensor& grad, const IntList& input_sizes, int64_t dim, int64_t index) {
  static const OpDef& def = lookup("aten.select_backward.default");
  return call1(def, {grad, input_sizes, dim, index});
}

Tensor slice_backward(const Tensor& grad, const IntList& input_sizes, int64_t dim, int64_t start,
                      int64_t end, int64_t step) {
  static const OpDef& def = lookup("aten.slice_backward.default");
  return call1(def, {grad, input_sizes, dim, start, end, step});
}

Tensor as_strided_scatter(const Tensor& self, const Tensor& src, const IntList& size,
                          const IntList& stride, int64_t storage_offset) {
  static const OpDef& def = lookup("aten.as_strided_scatter.default");
  return call1(def, {self, src, size, stride, storage_offset});
}

Tensor unsafe_view(const Tensor& a, const IntList& sizes) {
  static const OpDef& def = lookup("aten._unsafe_view.default");
  return call1(def, {a, sizes});
}

// ---- VJPs ----

std::vector<Tensor> reshape_vjp(const VjpContext& c) {
  return {c.needs(0) ? reshape(c.grad(), c.input(0).sizes()) : Tensor()};
}

std::vector<Tensor> identity_vjp(const VjpContext& c) {
  return {c.needs(0) ? c.grad() : Tensor()};
}

std::vector<Tensor> permute_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const IntList& dims = int_list_arg(c.args, 1);
  IntList inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[wrap_dim(dims[i], static_cast<int64_t>(dims.size()))] = static_cast<int64_t>(i);
  return {permute(c.grad(), inverse)};
}

std::vector<Tensor> transpose_vjp(const VjpContext& c) {
  return {c.needs(0) ? transpose(c.grad(), int_arg(c.args, 1), int_arg(c.args, 2)) : Tensor()};
}

std::vector<Tensor> t_vjp(const VjpContext& c) {
  return {c.needs(0) ? t(c.grad()) : Tensor()};
}

std::vector<Tensor> expand_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const IntList& sizes = c.input(0).sizes();
  return {c.grad().sizes() == sizes ? c.grad() : sum_to_size(c.grad(), sizes)};
}

std::vector<Tensor> unsqueeze_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {squeeze(c.grad(), wrap_dim(int_arg(c.args, 1), c.grad().dim()))};
}

std::vector<Tensor> squeeze_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  if (self.dim() == c.grad().dim()) return {c.grad()};
  return {unsqueeze(c.grad(), wrap_dim(int_arg(c.args, 1), self.dim()))};
}

std::vector<Tensor> slice_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const IntList& sizes = c.input(0).sizes();
  int64_t d = wrap_dim(int_arg(c.args, 1), static_cast<int64_t>(sizes.size()));
  int64_t step = int_arg(c.args, 4);
  SliceBounds b = slice_bounds("aten.slice.Tensor", sizes[d], optional_int(c.args, 2),
                               optional_int(c.args, 3), step);
  return {slice_backward(c.grad(), sizes, d, b.start, b.end, step)};
}

std::vector<Tensor> select_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const IntList& sizes = c.input(0).sizes();
  int64_t d = wrap_dim(int_arg(c.args, 1), static_cast<int64_t>(sizes.size()));
  int64_t index = int_arg(c.args, 2);
  return {select_backward(c.grad(), sizes, d, index < 0 ? index + sizes[d] : index)};
}

// PyTorch's as_strided_backward: scatter the gradient through the output geometry into a buffer
// standing for the shared storage, divide by how often the input geometry reads each element
// (only when the input overlaps itself), and read the input geometry back out.
std::vector<Tensor> as_strided_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  const Tensor& g = c.grad();
  const IntList& size = int_list_arg(c.args, 1);
  const IntList& stride = int_list_arg(c.args, 2);
  const int64_t out_offset = optional_int(c.args, 3).value_or(self.storage_offset());
  const int64_t shared = std::min(self.storage_offset(), out_offset);
  const int64_t in_off = self.storage_offset() - shared, out_off = out_offset - shared;
  const int64_t n = std::max(storage_extent(self.sizes(), self.strides(), in_off),
                             storage_extent(size, stride, out_off));
  Tensor storage = as_strided_scatter(zeros({n}, g.dtype()), g, size, stride, out_off);
  if (!kernels::is_non_overlapping(self.sizes(), self.strides())) {
    Tensor count = as_strided_scatter(zeros({n}, g.dtype()), ones(self.sizes(), g.dtype()),
                                      self.sizes(), self.strides(), in_off);
    storage = div(storage, count);  // 0/0 outside the input's reach; never read below
  }
  return {as_strided(storage, self.sizes(), self.strides(), in_off)};
}

std::vector<Tensor> select_backward_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {select(c.grad(), int_arg(c.args, 2), int_arg(c.args, 3))};
}

std::vector<Tensor> slice_backward_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {slice(c.grad(), int_arg(c.args, 2), int_arg(c.args, 3), int_arg(c.args, 4),
                int_arg(c.args, 5))};
}

std::vector<Tensor> as_strided_scatter_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  const IntList& size = int_list_arg(c.args, 2);
  const IntList& stride = int_list_arg(c.args, 3);
  const int64_t offset = optional_int(c.args, 4).value_or(0);
  Tensor g_self, g_src;
  // The window addresses the result's row-major storage; a contiguous g is laid out the same way
  // from its own storage offset on. A window over all of self gives zeros, defined, as eager's
  // CopySlices and the overwriting ops (zeros_like(grad)) give.
  if (c.needs(0))
    g_self = as_strided_scatter(g, zeros(size, g.dtype()), size, stride, offset);
  if (c.needs(1)) {
    Tensor dense = contiguous(g);
    g_src =
        to(as_strided(dense, size, stride, dense.storage_offset() + offset), c.input(1).dtype());
  }
  return {g_self, g_src};
}

// clang-format off
const OpDef kRows[] = {
  {.name = "aten.view.default", .schema = "view(Tensor(a) self, SymInt[] size) -> Tensor(a)",
   .meta = view_meta, .kernel = view_kernel<view_meta>, .vjp = reshape_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_reshape},
  // Not an autograd view: reshape uses it on a fresh clone, whose storage nobody else sees.
  {.name = "aten._unsafe_view.default", .schema = "_unsafe_view(Tensor self, SymInt[] size) -> Tensor",
   .meta = unsafe_view_meta, .kernel = untracked_alias_kernel<unsafe_view_meta>,
   .vjp = reshape_vjp, .recompute = Recompute::view},
  {.name = "aten._reshape_alias.default",
   .schema = "_reshape_alias(Tensor(a) self, SymInt[] size, SymInt[] stride) -> Tensor(a)",
   .meta = reshape_alias_meta, .kernel = view_kernel<reshape_alias_meta>, .vjp = reshape_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_reshape_alias},
  {.name = "aten.permute.default", .schema = "permute(Tensor(a) self, int[] dims) -> Tensor(a)",
   .meta = permute_meta, .kernel = view_kernel<permute_meta>, .vjp = permute_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_permute},
  {.name = "aten.transpose.int",
   .schema = "transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)",
   .meta = transpose_meta, .kernel = view_kernel<transpose_meta>, .vjp = transpose_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_transpose},
  {.name = "aten.t.default", .schema = "t(Tensor(a) self) -> Tensor(a)",
   .meta = t_meta, .kernel = view_kernel<t_meta>, .vjp = t_vjp, .recompute = Recompute::view,
   .view_scatter = view_scatter_t},
  // No view_scatter: an expanded view holds elements of its input several times, so the tracer
  // writes through it by position (Tracer::scatter_through_expand).
  {.name = "aten.expand.default",
   .schema = "expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)",
   .meta = expand_meta, .kernel = view_kernel<expand_meta>, .vjp = expand_vjp,
   .recompute = Recompute::view},
  {.name = "aten.unsqueeze.default", .schema = "unsqueeze(Tensor(a) self, int dim) -> Tensor(a)",
   .meta = unsqueeze_meta, .kernel = view_kernel<unsqueeze_meta>, .vjp = unsqueeze_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_unsqueeze},
  {.name = "aten.squeeze.dim", .schema = "squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)",
   .meta = squeeze_meta, .kernel = view_kernel<squeeze_meta>, .vjp = squeeze_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_squeeze},
  {.name = "aten.slice.Tensor",
   .schema = "slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
             "SymInt step=1) -> Tensor(a)",
   .meta = slice_meta, .kernel = view_kernel<slice_meta>, .vjp = slice_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_slice},
  {.name = "aten.select.int", .schema = "select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)",
   .meta = select_meta, .kernel = view_kernel<select_meta>, .vjp = select_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_select},
  {.name = "aten.as_strided.default",
   .schema = "as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
             "-> Tensor(a)",
   .meta = as_strided_meta, .kernel = view_kernel<as_strided_meta>, .vjp = as_strided_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_as_strided},
  {.name = "aten.alias.default", .schema = "alias(Tensor(a) self) -> Tensor(a)",
   .meta = same_geometry_meta, .kernel = view_kernel<same_geometry_meta>, .vjp = identity_vjp,
   .recompute = Recompute::view, .view_scatter = view_scatter_identity},
  // Shares storage (and so the version counter) but is no autograd view and never requires grad.
  {.name = "aten.detach.default", .schema = "detach(Tensor(a) self) -> Tensor(a)",
   .meta = same_geometry_meta, .kernel = untracked_alias_kernel<same_geometry_meta>,
   .recompute = Recompute::view, .view_scatter = view_scatter_identity},
  {.name = "aten.select_backward.default",
   .schema = "select_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt index) -> Tensor",
   .meta = select_backward_meta, .kernel = select_backward_kernel, .vjp = select_backward_vjp,
   .recompute = Recompute::pointwise},
  {.name = "aten.slice_backward.default",
   .schema = "slice_backward(Tensor grad_output, SymInt[] input_sizes, int dim, SymInt start, "
             "SymInt end, SymInt step) -> Tensor",
   .meta = slice_backward_meta, .kernel = slice_backward_kernel, .vjp = slice_backward_vjp,
   .recompute = Recompute::pointwise},
  {.name = "aten.as_strided_scatter.default",
   .schema = "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
             "SymInt? storage_offset=None) -> Tensor",
   .meta = as_strided_scatter_meta, .kernel = as_strided_scatter_kernel,
   .vjp = as_strided_scatter_vjp, .recompute = Recompute::pointwise},
};
// clang-format on

}  // namespace

std::span<const OpDef> view_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor view(const Tensor& a, const IntList& sizes) {
  static const ops::OpDef& def = ops::lookup("aten.view.default");
  return ops::call1(def, {a, sizes});
}

Tensor reshape(const Tensor& a, const IntList& sizes) {
  IntList shape = ops::infer_size("reshape", sizes, a.numel());
  if (ops::compute_stride(a.sizes(), a.strides(), shape)) return view(a, shape);
  return ops::unsafe_view(clone(a), shape);
}

Tensor permute(const Tensor& a, const IntList& dims) {
  static const ops::OpDef& def = ops::lookup("aten.permute.default");
  return ops::call1(def, {a, dims});
}

Tensor transpose(const Tensor& a, int64_t dim0, int64_t dim1) {
  static const ops::OpDef& def = ops::lookup("aten.transpose.int");
  return ops::call1(def, {a, dim0, dim1});
}

Tensor t(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.t.default");
  return ops::call1(def, {a});
}

Tensor expand(const Tensor& a, const IntList& sizes) {
  static const ops::OpDef& def = ops::lookup("aten.expand.default");
  return ops::call1(def, {a, sizes});
}

Tensor unsqueeze(const Tensor& a, int64_t dim) {
  static const ops::OpDef& def = ops::lookup("aten.unsqueeze.default");
  return ops::call1(def, {a, dim});
}

Tensor squeeze(const Tensor& a, int64_t dim) {
  static const ops::OpDef& def = ops::lookup("aten.squeeze.dim");
  return ops::call1(def, {a, dim});
}

Tensor slice(const Tensor& a, int64_t dim, int64_t start, int64_t end, int64_t step) {
  static const ops::OpDef& def = ops::lookup("aten.slice.Tensor");
  return ops::call1(def, {a, dim, start, end, step});
}

Tensor select(const Tensor& a, int64_t dim, int64_t index) {
  static const ops::OpDef& def = ops::lookup("aten.select.int");
  return ops::call1(def, {a, dim, index});
}

Tensor as_strided(const Tensor& a, const IntList& sizes, const IntList& strides,
                  std::optional<int64_t> storage_offset) {
  static const ops::OpDef& def = ops::lookup("aten.as_strided.default");
  ops::Arg offset = storage_offset ? ops::Arg(*storage_offset) : ops::Arg(std::monostate{});
  return ops::call1(def, {a, sizes, strides, offset});
}

Tensor alias(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.alias.default");
  return ops::call1(def, {a});
}

Tensor detach(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.detach.default");
  return ops::call1(def, {a});
}

}  // namespace aotgrad
