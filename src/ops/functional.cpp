// Ops that functionalization emits: the scatters that write an updated view back into its base
// (slice_scatter, select_scatter), the view_scatter rules of the view rows, and
// aotgrad.hidden_update, which carries a mutation autograd must not see.
#include <stdexcept>

#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "ops/families.h"
#include "ops/view_scatter.h"

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
    throw std::invalid_argument(std::string(view_op) + " scatter: src of shape " +
                                shape_to_string(src.sizes()) + " does not fit the selected region of shape " +
                                shape_to_string(r.sizes));
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

std::vector<TensorMeta> slice_scatter_meta(const OpArgs& a) { return scatter_meta("aten.slice.Tensor", a); }
std::vector<Tensor> slice_scatter_kernel(const OpArgs& a) { return scatter_kernel("aten.slice.Tensor", a); }
std::vector<TensorMeta> select_scatter_meta(const OpArgs& a) { return scatter_meta("aten.select.int", a); }
std::vector<Tensor> select_scatter_kernel(const OpArgs& a) { return scatter_kernel("aten.select.int", a); }

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
    throw std::invalid_argument("aotgrad.hidden_update: old and new values differ in shape or dtype");
  return {TensorMeta{updated.dtype(), updated.sizes(), updated.strides(), 0}};
}
std::vector<Tensor> hidden_update_kernel(const OpArgs& a) { return {tensor_arg(a, 1)}; }
// The new value stands for the old one as far as autograd is concerned: the mutation that made it
// happened under no_grad or through a detach()ed alias, which eager autograd does not record.
std::vector<Tensor> hidden_update_vjp(const VjpContext& c) {
  return {c.needs(0) ? c.grad() : Tensor(), Tensor()};
}

const OpDef kRows[] = {
    {.name = "aten.slice_scatter.default",
     .schema = "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) -> Tensor",
     .meta = slice_scatter_meta, .kernel = slice_scatter_kernel, .vjp = slice_scatter_vjp,
     .recompute = Recompute::pointwise},
    {.name = "aten.select_scatter.default",
     .schema = "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
     .meta = select_scatter_meta, .kernel = select_scatter_kernel, .vjp = select_scatter_vjp,
     .recompute = Recompute::pointwise},
    {.name = "aotgrad.hidden_update.default",
     .schema = "hidden_update(Tensor old, Tensor new) -> Tensor",
     .meta = hidden_update_meta, .kernel = hidden_update_kernel, .vjp = hidden_update_vjp,
     .recompute = Recompute::view},
};

}  // namespace

std::span<const OpDef> functional_ops() { return kRows; }

// ---- view_scatter rules (see view_scatter.h) ----

Tensor view_scatter_reshape(const Tensor& base, const Tensor& updated, const OpArgs&) {
  return reshape(updated, base.sizes());
}
Tensor view_scatter_identity(const Tensor&, const Tensor& updated, const OpArgs&) { return updated; }
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
Tensor view_scatter_t(const Tensor&, const Tensor& updated, const OpArgs&) { return t(updated); }
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
  return call1(lookup("aten.select_scatter.default"), {base, updated, int_arg(a, 1), int_arg(a, 2)});
}
Tensor view_scatter_as_strided(const Tensor& base, const Tensor& updated, const OpArgs& a) {
  return call1(lookup("aten.as_strided_scatter.default"), {base, updated, a[1], a[2], a[3]});
}

}  // namespace aotgrad::ops
