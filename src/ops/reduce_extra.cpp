// Reduction rows LibTorch programs use beyond the core family (issue 17): norm (the ScalarOpt_dim
// and Scalar overloads torch.norm records), all / any (whole tensor and along a dim; not
// differentiable) and argmin; and their public functions of aotgrad/nn_ops.h.
//
// norm's VJP is a composition of differentiable public ops following PyTorch 1.13's
// norm_backward, including its subgradients: zero where the norm is zero (p = 2 and general p),
// sign(x) for p = 1, and for p = +-inf the gradient split evenly among the elements that attain
// the norm.
#include <cmath>
#include <string>

#include "aotgrad/math.h"
#include "aotgrad/nn_ops.h"
#include "aotgrad/ops.h"
#include "kernels/math.h"
#include "kernels/nn_extra.h"
#include "kernels/reduction.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

constexpr char kNormDim[] = "aten.norm.ScalarOpt_dim";
constexpr char kNormScalar[] = "aten.norm.Scalar";
constexpr char kAll[] = "aten.all.default";
constexpr char kAllDim[] = "aten.all.dim";
constexpr char kAny[] = "aten.any.default";
constexpr char kAnyDim[] = "aten.any.dim";
constexpr char kArgmin[] = "aten.argmin.default";

// `dims` wrapped, distinct and ascending; empty means every dim.
IntList wrapped_dims(std::string_view op, const Tensor& self, const IntList& dims) {
  IntList out;
  const int64_t ndim = self.dim();
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) {
    int64_t w = dim_arg(op, d, std::max<int64_t>(ndim, 1));
    if (ndim == 0) continue;
    if (std::find(out.begin(), out.end(), w) != out.end())
      fail(op, "dim " + std::to_string(w) + " appears more than once in " + shape_to_string(dims));
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// ---- norm ----

struct NormArgs {
  double p;
  IntList dims;  // wrapped, ascending, never empty unless self is 0-dim
  bool keepdim;
};

NormArgs norm_args(const char* op, const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (!is_floating(self.dtype()))
    fail(op, "self must be a floating tensor (f32, f64, f16, bf16), got " +
                 std::string(dtype_name(self.dtype())) + "; convert it with .to(f32) first");
  const bool with_dims = std::string_view(op) == kNormDim;
  NormArgs n;
  n.p = is_none(a, 1) ? 2.0 : scalar_arg(a, 1).to_double();
  if (std::isnan(n.p)) fail(op, "p must be a number, got nan");
  n.dims = wrapped_dims(op, self, with_dims ? int_list_arg(a, 2) : IntList{});
  n.keepdim = with_dims && bool_arg(a, 3);
  if (std::isinf(n.p))
    for (int64_t d : n.dims)
      if (self.size(d) == 0)
        fail(op, "the infinity norm of an empty range is undefined (dim " + std::to_string(d) +
                     " of shape " + shape_to_string(self.sizes()) + " is empty)");
  return n;
}

template <const char* kName>
std::vector<TensorMeta> norm_meta(const OpArgs& a) {
  NormArgs n = norm_args(kName, a);
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(kernels::reduced_sizes(self.sizes(), n.dims, n.keepdim),
                                 self.dtype())};
}
template <const char* kName>
std::vector<Tensor> norm_kernel(const OpArgs& a) {
  NormArgs n = norm_args(kName, a);
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() == 0)
    return {kernels::norm(make_view(self, {1}, {1}, self.storage_offset()), n.p, {0}, false)};
  return {kernels::norm(self, n.p, n.dims, n.keepdim)};
}

template <const char* kName>
std::vector<Tensor> norm_vjp(const VjpContext& c) {
  NormArgs n = norm_args(kName, c.args);
  const Tensor& x = c.input(0);
  if (n.p == 0) return {zeros_like(x)};
  Tensor g = restore_reduced_dims(c.grad(), n.dims, n.keepdim);
  Tensor norm = restore_reduced_dims(c.output(), n.dims, n.keepdim);
  const Tensor zero = zeros({}, x.dtype());
  Tensor r;
  if (n.p == 1) {
    r = mul(sign(x), g);
  } else if (n.p == 2) {
    r = mul(x, where(eq(norm, 0), zero, div(g, norm)));
  } else if (std::isinf(n.p)) {
    Tensor attains = to(eq(abs(x), norm), x.dtype());
    Tensor count = sum(attains, n.dims, /*keepdim=*/true);
    r = mul(mul(sign(x), attains), div(g, count));
  } else {
    Tensor ax = abs(x);
    Tensor num = n.p < 2 ? mul(sign(x), pow(ax, n.p - 1)) : mul(x, pow(ax, n.p - 2));
    r = mul(num, where(eq(norm, 0), zero, div(g, pow(norm, n.p - 1))));
  }
  return {r.sizes() == x.sizes() ? r : sum_to_size(r, x.sizes())};
}

// ---- all / any ----

template <bool kAllOp, bool kDim>
std::vector<TensorMeta> all_any_meta(const OpArgs& a) {
  const char* op = kAllOp ? (kDim ? kAllDim : kAll) : (kDim ? kAnyDim : kAny);
  const Tensor& self = tensor_arg(a, 0);
  if (!kDim) return {TensorMeta::contiguous({}, DType::b8)};
  IntList dims = wrapped_dims(op, self, {int_arg(a, 1)});
  return {TensorMeta::contiguous(kernels::reduced_sizes(self.sizes(), dims, bool_arg(a, 2)),
                                 DType::b8)};
}
template <bool kAllOp, bool kDim>
std::vector<Tensor> all_any_kernel(const OpArgs& a) {
  const char* op = kAllOp ? (kDim ? kAllDim : kAll) : (kDim ? kAnyDim : kAny);
  all_any_meta<kAllOp, kDim>(a);
  const Tensor& self = tensor_arg(a, 0);
  if (self.dim() == 0)
    return {kernels::all_any(kAllOp, make_view(self, {1}, {1}, self.storage_offset()), {0}, false)};
  if (!kDim) return {kernels::all_any(kAllOp, self, {}, false)};
  return {kernels::all_any(kAllOp, self, wrapped_dims(op, self, {int_arg(a, 1)}), bool_arg(a, 2))};
}

// ---- argmin ----

std::vector<TensorMeta> argmin_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const bool keepdim = bool_arg(a, 2);
  if (is_none(a, 1)) {
    if (self.numel() == 0)
      fail(kArgmin, "the input is empty (shape " + shape_to_string(self.sizes()) +
                        "); pass a dim whose size is not 0");
    return {TensorMeta::contiguous(
        keepdim ? IntList(static_cast<size_t>(self.dim()), 1) : IntList{}, DType::i64)};
  }
  const int64_t dim = dim_arg(kArgmin, int_arg(a, 1), std::max<int64_t>(self.dim(), 1));
  if (self.dim() == 0) return {TensorMeta::contiguous({}, DType::i64)};
  if (self.size(dim) == 0)
    fail(kArgmin, "cannot reduce over dim " + std::to_string(dim) + " of size 0 (input shape " +
                      shape_to_string(self.sizes()) + ")");
  return {TensorMeta::contiguous(kernels::reduced_sizes(self.sizes(), {dim}, keepdim), DType::i64)};
}
std::vector<Tensor> argmin_kernel(const OpArgs& a) {
  argmin_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  std::optional<int64_t> dim;
  if (!is_none(a, 1) && self.dim() > 0) dim = wrap_dim(int_arg(a, 1), self.dim());
  return {kernels::argmax(self, dim, bool_arg(a, 2), /*is_max=*/false)};
}

// clang-format off
const OpDef kRows[] = {
  {.name = kNormDim,
   .schema = "norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor",
   .meta = norm_meta<kNormDim>, .kernel = norm_kernel<kNormDim>, .vjp = norm_vjp<kNormDim>,
   .saves = {.inputs = bit(0), .outputs = bit(0)}, .recompute = Recompute::reduction},
  {.name = kNormScalar, .schema = "norm.Scalar(Tensor self, Scalar p=2) -> Tensor",
   .meta = norm_meta<kNormScalar>, .kernel = norm_kernel<kNormScalar>,
   .vjp = norm_vjp<kNormScalar>, .saves = {.inputs = bit(0), .outputs = bit(0)},
   .recompute = Recompute::reduction},
  {.name = kAll, .schema = "all(Tensor self) -> Tensor",
   .meta = all_any_meta<true, false>, .kernel = all_any_kernel<true, false>,
   .recompute = Recompute::reduction},
  {.name = kAllDim, .schema = "all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
   .meta = all_any_meta<true, true>, .kernel = all_any_kernel<true, true>,
   .recompute = Recompute::reduction},
  {.name = kAny, .schema = "any(Tensor self) -> Tensor",
   .meta = all_any_meta<false, false>, .kernel = all_any_kernel<false, false>,
   .recompute = Recompute::reduction},
  {.name = kAnyDim, .schema = "any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor",
   .meta = all_any_meta<false, true>, .kernel = all_any_kernel<false, true>,
   .recompute = Recompute::reduction},
  {.name = kArgmin, .schema = "argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
   .meta = argmin_meta, .kernel = argmin_kernel, .recompute = Recompute::reduction},
};
// clang-format on

}  // namespace

std::span<const OpDef> reduce_extra_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor norm(const Tensor& self, const Scalar& p) {
  static const ops::OpDef& def = ops::lookup("aten.norm.Scalar");
  return ops::call1(def, {self, p});
}
Tensor norm(const Tensor& self, const std::optional<Scalar>& p, const IntList& dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.norm.ScalarOpt_dim");
  return ops::call1(def, {self, p ? ops::Arg(*p) : ops::Arg(std::monostate{}), dim, keepdim});
}
Tensor all(const Tensor& self) {
  static const ops::OpDef& def = ops::lookup("aten.all.default");
  return ops::call1(def, {self});
}
Tensor all(const Tensor& self, int64_t dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.all.dim");
  return ops::call1(def, {self, dim, keepdim});
}
Tensor any(const Tensor& self) {
  static const ops::OpDef& def = ops::lookup("aten.any.default");
  return ops::call1(def, {self});
}
Tensor any(const Tensor& self, int64_t dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.any.dim");
  return ops::call1(def, {self, dim, keepdim});
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.argmin.default");
  return ops::call1(def, {self, dim ? ops::Arg(*dim) : ops::Arg(std::monostate{}), keepdim});
}

}  // namespace aotgrad
