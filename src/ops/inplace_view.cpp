// The inplace_view family: in-place ops that change a tensor's geometry, not its data
// (schema `Tensor(a!) self -> Tensor(a!)`, functional variant a view op).
//
// Reading guide: every row borrows its functional view op's meta (the new geometry) and VJP;
// the shared kernel writes the new geometry into self's TensorImpl, so every handle of the tensor
// sees it. Two facts make the VJP work: the view op's VJP reads only the arguments and the
// gradient, and the eager interpreter hands it a snapshot of self taken before the kernel ran
// (autograd/eager.cpp), because self's TensorImpl no longer describes the old geometry.
// Under tracing these rows never run: the tracer records the view op and extends the tensor's
// view chain (trace/tracer.cpp).
#include <stdexcept>
#include <string>
#include <unordered_set>

#include "aotgrad/inplace_view.h"
#include "ops/families.h"
#include "ops/inplace_view.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kT = "aten.t.default";
constexpr std::string_view kTranspose = "aten.transpose.int";
constexpr std::string_view kUnsqueeze = "aten.unsqueeze.default";
constexpr std::string_view kSqueeze = "aten.squeeze.dim";
constexpr std::string_view kAsStrided = "aten.as_strided.default";

// The geometry self takes: the view op's result (the in-place schema has the same arguments).
template <const std::string_view& View>
std::vector<TensorMeta> inplace_view_meta(const OpArgs& a) {
  static const OpDef& view = lookup(View);
  return view.meta(a);
}

template <const std::string_view& View>
std::vector<Tensor> inplace_view_kernel(const OpArgs& a) {
  TensorMeta m = inplace_view_meta<View>(a).at(0);
  const Tensor& self = tensor_arg(a, 0);
  TensorImpl& impl = *self.impl();
  impl.sizes = std::move(m.sizes);
  impl.strides = std::move(m.strides);
  impl.storage_offset = m.storage_offset;
  return {self};
}

// The view op's VJP, on the arguments as they were before the call (see the reading guide).
std::vector<Tensor> inplace_view_vjp(const VjpContext& c) {
  const OpDef& view = lookup(c.op.functional_variant);
  VjpContext vc{view, c.args, c.outputs, c.grads, c.needs_grad};
  return view.vjp(vc);
}

// clang-format off
const OpDef kRows[] = {
  {.name = "aten.t_.default", .schema = "t_(Tensor(a!) self) -> Tensor(a!)",
   .meta = inplace_view_meta<kT>, .kernel = inplace_view_kernel<kT>, .vjp = inplace_view_vjp,
   .recompute = Recompute::effectful, .functional_variant = kT},
  {.name = "aten.transpose_.default",
   .schema = "transpose_(Tensor(a!) self, int dim0, int dim1) -> Tensor(a!)",
   .meta = inplace_view_meta<kTranspose>, .kernel = inplace_view_kernel<kTranspose>,
   .vjp = inplace_view_vjp, .recompute = Recompute::effectful, .functional_variant = kTranspose},
  {.name = "aten.unsqueeze_.default", .schema = "unsqueeze_(Tensor(a!) self, int dim) -> Tensor(a!)",
   .meta = inplace_view_meta<kUnsqueeze>, .kernel = inplace_view_kernel<kUnsqueeze>,
   .vjp = inplace_view_vjp, .recompute = Recompute::effectful, .functional_variant = kUnsqueeze},
  {.name = "aten.squeeze_.dim", .schema = "squeeze_.dim(Tensor(a!) self, int dim) -> Tensor(a!)",
   .meta = inplace_view_meta<kSqueeze>, .kernel = inplace_view_kernel<kSqueeze>,
   .vjp = inplace_view_vjp, .recompute = Recompute::effectful, .functional_variant = kSqueeze},
  {.name = "aten.as_strided_.default",
   .schema = "as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) "
             "-> Tensor(a!)",
   .meta = inplace_view_meta<kAsStrided>, .kernel = inplace_view_kernel<kAsStrided>,
   .vjp = inplace_view_vjp, .recompute = Recompute::effectful, .functional_variant = kAsStrided},
};
// clang-format on

}  // namespace

std::span<const OpDef> inplace_view_ops() { return kRows; }

bool mutates_metadata_only(const OpDef& op) {
  // Computed once from the table, so a row added elsewhere with a view as its functional variant
  // is recognised too.
  static const std::unordered_set<const OpDef*> rows = [] {
    std::unordered_set<const OpDef*> s;
    for (const OpDef* row : all_ops())
      if (row->is_inplace() && !row->functional_variant.empty())
        if (const OpDef* f = find(row->functional_variant); f && f->is_view()) s.insert(row);
    return s;
  }();
  return op.is_inplace() && rows.count(&op) != 0;
}

}  // namespace aotgrad::ops

namespace aotgrad {
namespace {

Tensor& apply(std::string_view name, Tensor& self, ops::OpArgs args) {
  args.insert(args.begin(), self);
  ops::dispatch(ops::lookup(name), std::move(args));
  return self;
}

}  // namespace

Tensor& t_(Tensor& self) { return apply("aten.t_.default", self, {}); }

Tensor& transpose_(Tensor& self, int64_t dim0, int64_t dim1) {
  return apply("aten.transpose_.default", self, {dim0, dim1});
}

Tensor& unsqueeze_(Tensor& self, int64_t dim) {
  return apply("aten.unsqueeze_.default", self, {dim});
}

Tensor& squeeze_(Tensor& self, int64_t dim) { return apply("aten.squeeze_.dim", self, {dim}); }

Tensor& as_strided_(Tensor& self, const IntList& size, const IntList& stride,
                    std::optional<int64_t> storage_offset) {
  ops::Arg offset = storage_offset ? ops::Arg(*storage_offset) : ops::Arg(std::monostate{});
  return apply("aten.as_strided_.default", self, {size, stride, offset});
}

}  // namespace aotgrad
