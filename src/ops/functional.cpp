// Ops that functionalization emits: the scatters that write an updated view back into its base
// (slice_scatter, select_scatter), the view_scatter rules of the view rows,
// aotgrad.hidden_update, which carries a mutation autograd must not see, and
// aotgrad.tensor_constant, a literal the traced function built from data (tensor_constant.h).
#include <charconv>
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "autograd/nodes.h"
#include "kernels/copy.h"
#include "ops/families.h"
#include "ops/tensor_constant.h"
#include "ops/view_scatter.h"
#include "tensor/dtype_dispatch.h"
#include "tensor/iter.h"

namespace aotgrad::ops {
namespace {

// The view of a fresh copy of `self` that `view_op` with `view_args` (tensor slot replaced)
// selects; used by the scatter kernels and metas.
TensorMeta region(const char* view_op, const Tensor& self, OpArgs view_args) {
  const OpDef& op = lookup(view_op);
  view_args[0] = self;
  normalize(op, view_args);
  return op.meta(view_args).at(0);
}

std::vector<TensorMeta> scatter_meta(const char* view_op, const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const Tensor& src = tensor_arg(a, 1);
  OpArgs view_args(a.begin() + 1, a.end());
  TensorMeta r = region(view_op, self, view_args);
  if (r.sizes != src.sizes())
    throw std::invalid_argument(
        std::string(view_op) + " scatter: src of shape " + shape_to_string(src.sizes()) +
        " does not fit the selected region of shape " + shape_to_string(r.sizes));
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}

std::vector<Tensor> scatter_kernel(const char* view_op, const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  Tensor out = kernels::contiguous_copy(self, self.dtype());
  OpArgs view_args(a.begin() + 1, a.end());
  TensorMeta r = region(view_op, out, view_args);
  kernels::copy_into(make_view(out, r.sizes, r.strides, r.storage_offset), tensor_arg(a, 1));
  return {out};
}

std::vector<TensorMeta> slice_scatter_meta(const OpArgs& a) {
  return scatter_meta("aten.slice.Tensor", a);
}
std::vector<Tensor> slice_scatter_kernel(const OpArgs& a) {
  return scatter_kernel("aten.slice.Tensor", a);
}
std::vector<TensorMeta> select_scatter_meta(const OpArgs& a) {
  return scatter_meta("aten.select.int", a);
}
std::vector<Tensor> select_scatter_kernel(const OpArgs& a) {
  return scatter_kernel("aten.select.int", a);
}

Tensor slice_of(const Tensor& t, const OpArgs& a) {
  return call1(lookup("aten.slice.Tensor"), {t, int_arg(a, 2), a[3], a[4], int_arg(a, 5)});
}

std::vector<Tensor> slice_scatter_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  Tensor g_self, g_src;
  if (c.needs(0))
    g_self = call1(lookup("aten.slice_scatter.default"),
                   {g, zeros_like(slice_of(g, c.args)), int_arg(c.args, 2), c.args[3], c.args[4],
                    int_arg(c.args, 5)});
  if (c.needs(1)) g_src = slice_of(g, c.args);
  return {g_self, g_src};
}

std::vector<Tensor> select_scatter_vjp(const VjpContext& c) {
  const Tensor& g = c.grad();
  int64_t dim = int_arg(c.args, 2), index = int_arg(c.args, 3);
  Tensor g_self, g_src;
  if (c.needs(0))
    g_self = call1(lookup("aten.select_scatter.default"),
                   {g, zeros_like(select(g, dim, index)), dim, index});
  if (c.needs(1)) g_src = select(g, dim, index);
  return {g_self, g_src};
}

std::vector<TensorMeta> hidden_update_meta(const OpArgs& a) {
  const Tensor& old = tensor_arg(a, 0);
  const Tensor& updated = tensor_arg(a, 1);
  if (old.sizes() != updated.sizes() || old.dtype() != updated.dtype())
    throw std::invalid_argument(
        "aotgrad.hidden_update: old and new values differ in shape or dtype");
  return {
      TensorMeta{updated.dtype(), updated.sizes(), updated.strides(), updated.storage_offset()}};
}
// A view of `new`, at its offset (as geometry_update): an as_strided of the result addresses
// `new`'s storage, as eager's of the tensor it stands for does (AotProgramFuzz, seed 3328589: an
// as_strided at the offset of a detach()ed alias, written with grad on, whose gradient fell
// between the elements of an offset-0 result).
std::vector<Tensor> hidden_update_kernel(const OpArgs& a) {
  return {autograd::detached_alias(tensor_arg(a, 1))};
}
// The new value stands for the old one as far as autograd is concerned: the mutation that made it
// happened under no_grad or through a detach()ed alias, which eager autograd does not record.
std::vector<Tensor> hidden_update_vjp(const VjpContext& c) {
  return {c.needs(0) ? c.grad() : Tensor(), Tensor()};
}

// aotgrad.geometry_update(old, new): `new` is `old` after t_, transpose_, unsqueeze_, ... made
// under no_grad. Eager records nothing there: the tensor keeps its node, and the gradient of its
// new geometry reaches that node as it is (PyTorch's validate_outputs: taken when the shapes
// agree, whatever layout it stands for; summed when the old shape broadcasts to the new one;
// refused otherwise, as autograd's engine does). With fit=False the gradient passes as it is,
// whatever its sizes: `old` is a leaf's, whose AccumulateGrad fits it to the sizes it recorded when
// it was made (the runtime gives one made by the call the sizes eager's saw: AutogradBody).
std::vector<TensorMeta> geometry_update_meta(const OpArgs& a) {
  const Tensor& old = tensor_arg(a, 0);
  const Tensor& updated = tensor_arg(a, 1);
  // as_strided_ may change the element count: eager refuses the gradient only if one reaches it.
  if (old.dtype() != updated.dtype())
    throw std::invalid_argument("aotgrad.geometry_update: old and new values differ in dtype");
  return {
      TensorMeta{updated.dtype(), updated.sizes(), updated.strides(), updated.storage_offset()}};
}
// A view of `new` (its schema says so): passes that follow views (common subexpressions, saved
// values, buffer lifetimes) must see that the result shares `new`'s storage. Recorded as a fresh
// tensor, not a view with a _base, as `new` itself is not one of the tensor either.
std::vector<Tensor> geometry_update_kernel(const OpArgs& a) {
  return {autograd::detached_alias(tensor_arg(a, 1))};
}
std::vector<Tensor> geometry_update_vjp(const VjpContext& c) {
  if (!c.needs(0) || !c.grad().defined()) return {Tensor(), Tensor()};
  const IntList& want = c.input(0).sizes();
  const Tensor& g = c.grad();
  const bool fit = c.args.size() < 3 || bool_arg(c.args, 2);
  if (g.sizes() == want || !fit) return {g, Tensor()};
  if (!expandable_to(want, g.sizes()))
    throw std::runtime_error("invalid gradient at index 0 - got " + shape_to_string(g.sizes()) +
                             " but expected shape compatible with " + shape_to_string(want));
  return {sum_to_size(g, want), Tensor()};
}

// ---- aotgrad.tensor_constant(str values, int[] size, ScalarType dtype) ----
// `values`: the elements in row-major order, separated by ", ": integers for i64, true / false
// for b8, and for floating dtypes the shortest decimal that reads back to the same value of the
// dtype (nan, inf and -inf included; a NaN's payload is not kept).

constexpr std::string_view kConstant = "aotgrad.tensor_constant.default";

[[noreturn]] void constant_fail(const std::string& what) {
  throw std::invalid_argument(std::string(kConstant) + ": " + what);
}

template <typename T>
void append_number(std::string& out, T v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

// The elements of `values`, each read as T (double for every floating dtype: see fill_constant).
template <typename T>
std::vector<T> read_elements(std::string_view values, DType dtype, int64_t expected) {
  std::vector<T> out;
  size_t pos = 0;
  while (pos < values.size() && out.size() <= static_cast<size_t>(expected)) {
    size_t end = values.find(',', pos);
    if (end == std::string_view::npos) end = values.size();
    std::string_view item = values.substr(pos, end - pos);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    T v{};
    bool ok = false;
    if constexpr (std::is_same_v<T, bool>) {
      ok = item == "true" || item == "false";
      v = item == "true";
    } else if (dtype == DType::f32 || dtype == DType::f16 || dtype == DType::bf16) {
      float f = 0;  // read as the dtype's own precision: the text is the shortest float form
      auto r = std::from_chars(item.data(), item.data() + item.size(), f);
      ok = r.ec == std::errc() && r.ptr == item.data() + item.size();
      v = static_cast<T>(f);
    } else {
      auto r = std::from_chars(item.data(), item.data() + item.size(), v);
      ok = r.ec == std::errc() && r.ptr == item.data() + item.size();
    }
    if (!ok)
      constant_fail("element " + std::to_string(out.size()) + " of 'values' is not a " +
                    std::string(dtype_name(dtype)) + " number (it reads '" +
                    std::string(item.substr(0, 40)) + "')");
    out.push_back(v);
    pos = end + 1;
  }
  if (static_cast<int64_t>(out.size()) > expected)
    constant_fail("'values' holds more than the " + std::to_string(expected) +
                  " elements its size asks for");
  if (static_cast<int64_t>(out.size()) < expected)
    constant_fail("'values' holds " + std::to_string(out.size()) +
                  " elements, but its size asks for " + std::to_string(expected));
  return out;
}

int64_t constant_numel(const IntList& size) {
  int64_t n = 1;
  for (int64_t s : size) {
    if (s < 0) constant_fail("negative size in " + shape_to_string(size));
    if (s > kMaxConstantElements || n * s > kMaxConstantElements)
      constant_fail("size " + shape_to_string(size) + " exceeds " +
                    std::to_string(kMaxConstantElements) + " elements");
    n *= s;
  }
  return n;
}

template <typename D, typename S>
void write_elements(const Tensor& out, const std::vector<S>& v) {
  D* dst = reinterpret_cast<D*>(out.impl()->data_bytes());
  for (size_t k = 0; k < v.size(); ++k) dst[k] = convert<D>(v[k]);
}

Tensor fill_constant(const OpArgs& a) {
  const std::string& values = string_arg(a, 0);
  const IntList& size = int_list_arg(a, 1);
  DType dtype = dtype_arg(a, 2);
  int64_t n = constant_numel(size);
  Tensor out = make_tensor(size, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    if (dtype == DType::i64)
      write_elements<D>(out, read_elements<int64_t>(values, dtype, n));
    else if (dtype == DType::b8)
      write_elements<D>(out, read_elements<bool>(values, dtype, n));
    else
      write_elements<D>(out, read_elements<double>(values, dtype, n));
  });
  return out;
}

std::vector<TensorMeta> tensor_constant_meta(const OpArgs& a) {
  // The elements are checked too: a graph read from text must fail here, not when it runs.
  const IntList& size = int_list_arg(a, 1);
  DType dtype = dtype_arg(a, 2);
  int64_t n = constant_numel(size);
  if (dtype == DType::i64)
    read_elements<int64_t>(string_arg(a, 0), dtype, n);
  else if (dtype == DType::b8)
    read_elements<bool>(string_arg(a, 0), dtype, n);
  else
    read_elements<double>(string_arg(a, 0), dtype, n);
  return {TensorMeta::contiguous(size, dtype)};
}

std::vector<Tensor> tensor_constant_kernel(const OpArgs& a) {
  return {fill_constant(a)};
}

const OpDef kRows[] = {
    {.name = "aten.slice_scatter.default",
     .schema = "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? "
               "end=None, SymInt step=1) -> Tensor",
     .meta = slice_scatter_meta,
     .kernel = slice_scatter_kernel,
     .vjp = slice_scatter_vjp,
     .recompute = Recompute::pointwise},
    {.name = "aten.select_scatter.default",
     .schema = "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
     .meta = select_scatter_meta,
     .kernel = select_scatter_kernel,
     .vjp = select_scatter_vjp,
     .recompute = Recompute::pointwise},
    {.name = "aotgrad.hidden_update.default",
     .schema = "hidden_update(Tensor old, Tensor(a) new) -> Tensor(a)",
     .meta = hidden_update_meta,
     .kernel = hidden_update_kernel,
     .vjp = hidden_update_vjp,
     .recompute = Recompute::view},
    {.name = "aotgrad.geometry_update.default",
     .schema = "geometry_update(Tensor old, Tensor(a) new, bool fit=True) -> Tensor(a)",
     .meta = geometry_update_meta,
     .kernel = geometry_update_kernel,
     .vjp = geometry_update_vjp,
     .recompute = Recompute::view},
    {.name = kConstant,
     .schema = "tensor_constant(str values, int[] size, ScalarType dtype) -> Tensor",
     .meta = tensor_constant_meta,
     .kernel = tensor_constant_kernel,
     .recompute = Recompute::factory},
};

}  // namespace

std::span<const OpDef> functional_ops() {
  return kRows;
}

OpArgs tensor_constant_args(const Tensor& t) {
  if (t.numel() > kMaxConstantElements)
    constant_fail("a tensor of " + std::to_string(t.numel()) + " elements is too large to " +
                  "write into the graph (at most " + std::to_string(kMaxConstantElements) + ")");
  std::string values;
  auto element = [&](auto v) {
    if (!values.empty()) values += ", ";
    if constexpr (std::is_same_v<decltype(v), bool>)
      values += v ? "true" : "false";
    else
      append_number(values, v);
  };
  if (t.dtype() == DType::i64) {
    for (int64_t v : t.to_vector<int64_t>()) element(v);
  } else if (t.dtype() == DType::b8) {
    for (bool v : t.to_vector<bool>()) element(v);
  } else if (t.dtype() == DType::f64) {
    for (double v : t.to_vector<double>()) element(v);
  } else {  // f32, f16, bf16: every value is a float exactly
    for (double v : t.to_vector<double>()) element(static_cast<float>(v));
  }
  return {values, t.sizes(), t.dtype()};
}

// ---- view_scatter rules (see view_scatter.h) ----

Tensor view_scatter_reshape(const Tensor& base, const Tensor& updated, const OpArgs&) {
  return reshape(updated, base.sizes());
}
Tensor view_scatter_identity(const Tensor&, const Tensor& updated, const OpArgs&) {
  return updated;
}
Tensor view_scatter_permute(const Tensor&, const Tensor& updated, const OpArgs& a) {
  const IntList& dims = int_list_arg(a, 1);
  IntList inverse(dims.size());
  for (size_t i = 0; i < dims.size(); ++i)
    inverse[wrap_dim(dims[i], static_cast<int64_t>(dims.size()))] = static_cast<int64_t>(i);
  return permute(updated, inverse);
}
Tensor view_scatter_transpose(const Tensor&, const Tensor& updated, const OpArgs& a) {
  return transpose(updated, int_arg(a, 1), int_arg(a, 2));
}
Tensor view_scatter_t(const Tensor&, const Tensor& updated, const OpArgs&) {
  return t(updated);
}
Tensor view_scatter_unsqueeze(const Tensor&, const Tensor& updated, const OpArgs& a) {
  return squeeze(updated, int_arg(a, 1));
}
Tensor view_scatter_squeeze(const Tensor& base, const Tensor& updated, const OpArgs& a) {
  int64_t dim = wrap_dim(int_arg(a, 1), base.dim());
  return base.dim() > 0 && base.size(dim) == 1 ? unsqueeze(updated, dim) : updated;
}
Tensor view_scatter_slice(const Tensor& base, const Tensor& updated, const OpArgs& a) {
  return call1(lookup("aten.slice_scatter.default"),
               {base, updated, int_arg(a, 1), a[2], a[3], int_arg(a, 4)});
}
Tensor view_scatter_select(const Tensor& base, const Tensor& updated, const OpArgs& a) {
  return call1(lookup("aten.select_scatter.default"),
               {base, updated, int_arg(a, 1), int_arg(a, 2)});
}
Tensor view_scatter_as_strided(const Tensor& base, const Tensor& updated, const OpArgs& a) {
  return call1(lookup("aten.as_strided_scatter.default"), {base, updated, a[1], a[2], a[3]});
}

}  // namespace aotgrad::ops
