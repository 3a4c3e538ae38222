// Math rows: clamp, abs, sign (pointwise); max.dim / min.dim, argmax, var / std, logsumexp
// (reductions); cumsum (a scan).
//
// Reading guide: shared dim and dtype helpers first, then one meta / kernel / VJP trio per op,
// then the table kRows, then the public functions of aotgrad/math.h. Every kernel adapter runs its
// meta first, so eager calls get the same argument checks as traced ones. VJPs follow PyTorch's
// derivatives.yaml and are written with table ops only, so they trace into backward graphs:
// max/min scatter the gradient into the selected position through a one-hot mask
// (arange == index) rather than an in-place scatter.
#include "kernels/math.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "aotgrad/math.h"
#include "aotgrad/ops.h"
#include "ops/families.h"
#include "ops/row_helpers.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

void check_floating(std::string_view op, const Tensor& self) {
  if (!is_floating(self.dtype()))
    fail(op, "self must be a floating tensor (f32, f64, f16, bf16), got " +
                 std::string(dtype_name(self.dtype())) + "; convert it with .to(f32) first");
}

std::optional<Scalar> optional_scalar(const OpArgs& a, size_t i) {
  if (is_none(a, i)) return std::nullopt;
  return scalar_arg(a, i);
}

// The wrapped, sorted dims of the `arg` list (None or empty = every dim). A 0-dim tensor accepts
// dim 0 / -1 and reduces nothing, so its list comes back empty.
IntList reduce_dims(std::string_view op, const Tensor& self, const OpArgs& args, size_t arg) {
  IntList given;
  if (!is_none(args, arg)) given = int_list_arg(args, arg);
  IntList out;
  if (given.empty()) {
    for (int64_t d = 0; d < self.dim(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : given) {
    int64_t w = wrap_dim(d, self.dim(), (std::string(op) + ": dim").c_str());
    if (std::find(out.begin(), out.end(), w) != out.end())
      fail(op, "dim " + std::to_string(w) + " appears multiple times in the list of dims");
    out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  if (self.dim() == 0) out.clear();
  return out;
}

IntList reduced_sizes(const Tensor& self, const IntList& dims, bool keepdim) {
  IntList out;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (std::find(dims.begin(), dims.end(), d) == dims.end())
      out.push_back(self.size(d));
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

int64_t reduced_count(const Tensor& self, const IntList& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= self.size(d);
  return n;
}

std::vector<TensorMeta> one(const IntList& sizes, DType dtype) {
  return {TensorMeta::contiguous(sizes, dtype)};
}

// ---- clamp ----

std::vector<TensorMeta> clamp_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  std::optional<Scalar> lo = optional_scalar(a, 1), hi = optional_scalar(a, 2);
  if (!lo && !hi) fail("aten.clamp.default", "at least one of 'min' or 'max' must not be None");
  ResultTypeState state;
  state.add(self);
  if (lo) state.add(*lo);
  if (hi) state.add(*hi);
  return one(self.sizes(), state.result());
}
std::vector<Tensor> clamp_kernel(const OpArgs& a) {
  DType dt = clamp_meta(a)[0].dtype;
  return {kernels::clamp(tensor_arg(a, 0), optional_scalar(a, 1), optional_scalar(a, 2), dt)};
}
// The gradient passes where min <= self <= max (bounds inclusive, as PyTorch). Unlike PyTorch,
// a NaN input passes it too: the mask is built from lt/gt, the comparisons the table has.
std::vector<Tensor> clamp_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  Tensor g = c.grad();
  Tensor zero = zeros({}, g.dtype());
  if (std::optional<Scalar> lo = optional_scalar(c.args, 1)) g = where(lt(self, *lo), zero, g);
  if (std::optional<Scalar> hi = optional_scalar(c.args, 2)) g = where(gt(self, *hi), zero, g);
  return {cast_like(g, self)};
}

// ---- abs / sign ----

std::vector<TensorMeta> abs_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  if (self.dtype() == DType::b8)
    fail("aten.abs.default",
         "abs of a bool tensor is not supported (as in torch); convert it "
         "with .to(i64) or .to(f32) first");
  return one(self.sizes(), self.dtype());
}
std::vector<Tensor> abs_kernel(const OpArgs& a) {
  abs_meta(a);
  return {kernels::abs(tensor_arg(a, 0))};
}
std::vector<Tensor> abs_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {mul(c.grad(), sign(c.input(0)))};
}

std::vector<TensorMeta> sign_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return one(self.sizes(), self.dtype());
}
std::vector<Tensor> sign_kernel(const OpArgs& a) {
  return {kernels::sign(tensor_arg(a, 0))};
}
// sign is piecewise constant: a zero gradient, defined (as PyTorch's), so .grad() is zeros.
std::vector<Tensor> sign_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {zeros_like(c.grad())};
}

// ---- max.dim / min.dim ----

template <bool kMax>
std::vector<TensorMeta> max_min_dim_meta(const OpArgs& a) {
  const char* op = kMax ? "aten.max.dim" : "aten.min.dim";
  const Tensor& self = tensor_arg(a, 0);
  int64_t dim = wrap_dim(int_arg(a, 1), self.dim(), (std::string(op) + ": dim").c_str());
  if (self.dim() > 0 && self.size(dim) == 0)
    fail(op, "cannot reduce over dim " + std::to_string(dim) + " of size 0 (input shape " +
                 shape_to_string(self.sizes()) + "); the " + (kMax ? "maximum" : "minimum") +
                 " of no elements is undefined");
  IntList sizes = self.dim() == 0 ? IntList{} : reduced_sizes(self, {dim}, bool_arg(a, 2));
  return {TensorMeta::contiguous(sizes, self.dtype()), TensorMeta::contiguous(sizes, DType::i64)};
}
template <bool kMax>
std::vector<Tensor> max_min_dim_kernel(const OpArgs& a) {
  max_min_dim_meta<kMax>(a);
  const Tensor& self = tensor_arg(a, 0);
  auto [values, indices] =
      self.dim() == 0
          ? kernels::max_min_dim(make_view(self, {1}, {1}, self.storage_offset()), 0, false, kMax)
          : kernels::max_min_dim(self, wrap_dim(int_arg(a, 1), self.dim()), bool_arg(a, 2), kMax);
  return {values, indices};
}
// The gradient lands on the selected element only: grad where (position == index), else 0.
std::vector<Tensor> max_min_dim_vjp(const VjpContext& c) {
  if (!c.needs(0) || !c.grad(0).defined()) return {Tensor()};
  const Tensor& self = c.input(0);
  if (self.dim() == 0) return {c.grad(0)};
  const int64_t dim = wrap_dim(int_arg(c.args, 1), self.dim());
  const bool keepdim = bool_arg(c.args, 2);
  Tensor g = restore_reduced_dims(c.grad(0), {dim}, keepdim);
  Tensor index = restore_reduced_dims(c.output(1), {dim}, keepdim);
  IntList position_shape(static_cast<size_t>(self.dim()), 1);
  position_shape[static_cast<size_t>(dim)] = self.size(dim);
  Tensor positions = view(arange(self.size(dim)), position_shape);
  return {where(eq(positions, index), g, zeros({}, g.dtype()))};
}

// ---- argmax ----

std::vector<TensorMeta> argmax_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  const bool keepdim = bool_arg(a, 2);
  if (is_none(a, 1)) {
    if (self.numel() == 0)
      fail("aten.argmax.default", "the input is empty (shape " + shape_to_string(self.sizes()) +
                                      "); pass a dim whose size is not 0");
    return one(keepdim ? IntList(static_cast<size_t>(self.dim()), 1) : IntList{}, DType::i64);
  }
  int64_t dim = wrap_dim(int_arg(a, 1), self.dim(), "aten.argmax.default: dim");
  if (self.dim() == 0) return one({}, DType::i64);
  if (self.size(dim) == 0)
    fail("aten.argmax.default", "cannot reduce over dim " + std::to_string(dim) +
                                    " of size 0 (input shape " + shape_to_string(self.sizes()) +
                                    ")");
  return one(reduced_sizes(self, {dim}, keepdim), DType::i64);
}
std::vector<Tensor> argmax_kernel(const OpArgs& a) {
  argmax_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  std::optional<int64_t> dim;
  if (!is_none(a, 1) && self.dim() > 0) dim = wrap_dim(int_arg(a, 1), self.dim());
  return {kernels::argmax(self, dim, bool_arg(a, 2))};
}

// ---- var / std ----

double correction_of(const OpArgs& a) {
  return is_none(a, 2) ? 1.0 : scalar_arg(a, 2).to_double();
}

template <bool kStd>
std::vector<TensorMeta> var_meta(const OpArgs& a) {
  const char* op = kStd ? "aten.std.correction" : "aten.var.correction";
  const Tensor& self = tensor_arg(a, 0);
  check_floating(op, self);
  IntList dims = reduce_dims(op, self, a, 1);
  return one(reduced_sizes(self, dims, bool_arg(a, 3)), self.dtype());
}
template <bool kStd>
std::vector<Tensor> var_kernel(const OpArgs& a) {
  var_meta<kStd>(a);
  const Tensor& self = tensor_arg(a, 0);
  IntList dims = reduce_dims("var", self, a, 1);
  return {kernels::var(self, dims, correction_of(a), bool_arg(a, 3), kStd)};
}
// PyTorch's var_backward: (2 / (n - correction)) * grad * (self - mean(self)).
Tensor var_backward(const Tensor& grad, const Tensor& self, const OpArgs& args) {
  IntList dims = reduce_dims("var", self, args, 1);
  const double n = static_cast<double>(reduced_count(self, dims));
  Tensor g = restore_reduced_dims(grad, dims, bool_arg(args, 3));
  Tensor centered = sub(self, mean(self, dims, /*keepdim=*/true));
  return mul(mul(g, centered), 2.0 / (n - correction_of(args)));
}
std::vector<Tensor> var_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  return {var_backward(c.grad(), c.input(0), c.args)};
}
// std = sqrt(var): grad_var = grad / (2 std), taken as 0 where std is 0 (as PyTorch).
std::vector<Tensor> std_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& result = c.output();
  Tensor grad_var = where(eq(result, 0), zeros({}, result.dtype()), div(c.grad(), mul(result, 2)));
  return {var_backward(grad_var, c.input(0), c.args)};
}

// ---- logsumexp ----

std::vector<TensorMeta> logsumexp_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  IntList dims = reduce_dims("aten.logsumexp.default", self, a, 1);
  return one(reduced_sizes(self, dims, bool_arg(a, 2)), float_op_dtype(self.dtype()));
}
std::vector<Tensor> logsumexp_kernel(const OpArgs& a) {
  DType dt = logsumexp_meta(a)[0].dtype;
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::logsumexp(self, reduce_dims("logsumexp", self, a, 1), bool_arg(a, 2), dt)};
}
// d/dx log(sum(exp(x))) = exp(x - result).
std::vector<Tensor> logsumexp_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  IntList dims = reduce_dims("logsumexp", self, c.args, 1);
  const bool keepdim = bool_arg(c.args, 2);
  Tensor result = restore_reduced_dims(c.output(), dims, keepdim);
  Tensor g = restore_reduced_dims(c.grad(), dims, keepdim);
  return {cast_like(mul(g, exp(sub(self, result))), self)};
}

// ---- cumsum ----

DType cumsum_dtype(const Tensor& self, const OpArgs& a) {
  if (!is_none(a, 2)) return dtype_arg(a, 2);
  return is_floating(self.dtype()) ? self.dtype() : DType::i64;  // as sum: ints and bools -> i64
}
std::vector<TensorMeta> cumsum_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  wrap_dim(int_arg(a, 1), self.dim(), "aten.cumsum.default: dim");
  return one(self.sizes(), cumsum_dtype(self, a));
}
std::vector<Tensor> cumsum_kernel(const OpArgs& a) {
  DType dt = cumsum_meta(a)[0].dtype;
  const Tensor& self = tensor_arg(a, 0);
  return {kernels::cumsum(self, wrap_dim(int_arg(a, 1), self.dim()), dt)};
}
// The reversed cumulative sum of grad, as total - cumsum + grad (no flip op needed).
std::vector<Tensor> cumsum_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  const Tensor& self = c.input(0);
  const Tensor& g = c.grad();
  if (self.dim() == 0) return {cast_like(g, self)};
  const int64_t dim = wrap_dim(int_arg(c.args, 1), self.dim());
  if (self.size(dim) <= 1) return {cast_like(g, self)};
  Tensor reversed = sub(add(sum(g, {dim}, /*keepdim=*/true), g), cumsum(g, dim));
  return {cast_like(reversed, self)};
}

const OpDef kRows[] = {
    {.name = "aten.clamp.default",
     .schema = "clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor",
     .meta = clamp_meta,
     .kernel = clamp_kernel,
     .vjp = clamp_vjp,
     .saves = {.inputs = bit(0)},
     // No fusion_expr: a template cannot say "bound absent"; the code generator calls the kernel.
     .recompute = Recompute::pointwise},
    {.name = "aten.abs.default",
     .schema = "abs(Tensor self) -> Tensor",
     .meta = abs_meta,
     .kernel = abs_kernel,
     .vjp = abs_vjp,
     .saves = {.inputs = bit(0)},
     .recompute = Recompute::pointwise,
     .fusion_expr = "std::abs(a)"},
    {.name = "aten.sign.default",
     .schema = "sign(Tensor self) -> Tensor",
     .meta = sign_meta,
     .kernel = sign_kernel,
     .vjp = sign_vjp,
     .recompute = Recompute::pointwise,
     .fusion_expr = "static_cast<decltype(a)>((decltype(a)(0) < a) - (a < decltype(a)(0)))"},
    {.name = "aten.max.dim",
     .schema =
         "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
     .meta = max_min_dim_meta<true>,
     .kernel = max_min_dim_kernel<true>,
     .vjp = max_min_dim_vjp,
     .saves = {.outputs = bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten.min.dim",
     .schema =
         "min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
     .meta = max_min_dim_meta<false>,
     .kernel = max_min_dim_kernel<false>,
     .vjp = max_min_dim_vjp,
     .saves = {.outputs = bit(1)},
     .recompute = Recompute::reduction},
    {.name = "aten.argmax.default",
     .schema = "argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor",
     .meta = argmax_meta,
     .kernel = argmax_kernel,
     .recompute = Recompute::reduction},
    {.name = "aten.var.correction",
     .schema = "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
               "bool keepdim=False) -> Tensor",
     .meta = var_meta<false>,
     .kernel = var_kernel<false>,
     .vjp = var_vjp,
     .saves = {.inputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten.std.correction",
     .schema = "std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, "
               "bool keepdim=False) -> Tensor",
     .meta = var_meta<true>,
     .kernel = var_kernel<true>,
     .vjp = std_vjp,
     .saves = {.inputs = bit(0), .outputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten.logsumexp.default",
     .schema = "logsumexp(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
     .meta = logsumexp_meta,
     .kernel = logsumexp_kernel,
     .vjp = logsumexp_vjp,
     .saves = {.inputs = bit(0), .outputs = bit(0)},
     .recompute = Recompute::reduction},
    {.name = "aten.cumsum.default",
     .schema = "cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor",
     .meta = cumsum_meta,
     .kernel = cumsum_kernel,
     .vjp = cumsum_vjp,
     .recompute = Recompute::reduction},
};

}  // namespace

std::span<const OpDef> math_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

namespace {
ops::Arg optional_arg(const std::optional<Scalar>& s) {
  return s ? ops::Arg(*s) : ops::Arg(std::monostate{});
}
}  // namespace

Tensor clamp(const Tensor& a, const std::optional<Scalar>& min, const std::optional<Scalar>& max) {
  static const ops::OpDef& def = ops::lookup("aten.clamp.default");
  return ops::call1(def, {a, optional_arg(min), optional_arg(max)});
}

Tensor abs(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.abs.default");
  return ops::call1(def, {a});
}

Tensor sign(const Tensor& a) {
  static const ops::OpDef& def = ops::lookup("aten.sign.default");
  return ops::call1(def, {a});
}

std::tuple<Tensor, Tensor> max(const Tensor& a, int64_t dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.max.dim");
  std::vector<Tensor> r = ops::dispatch(def, {a, dim, keepdim});
  return {r.at(0), r.at(1)};
}

std::tuple<Tensor, Tensor> min(const Tensor& a, int64_t dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.min.dim");
  std::vector<Tensor> r = ops::dispatch(def, {a, dim, keepdim});
  return {r.at(0), r.at(1)};
}

Tensor argmax(const Tensor& a, std::optional<int64_t> dim, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.argmax.default");
  return ops::call1(def, {a, dim ? ops::Arg(*dim) : ops::Arg(std::monostate{}), keepdim});
}

Tensor var(const Tensor& a, const std::optional<IntList>& dims, const Scalar& correction,
           bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.var.correction");
  return ops::call1(def,
                    {a, dims ? ops::Arg(*dims) : ops::Arg(std::monostate{}), correction, keepdim});
}

Tensor std(const Tensor& a, const std::optional<IntList>& dims, const Scalar& correction,
           bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.std.correction");
  return ops::call1(def,
                    {a, dims ? ops::Arg(*dims) : ops::Arg(std::monostate{}), correction, keepdim});
}

Tensor logsumexp(const Tensor& a, const IntList& dims, bool keepdim) {
  static const ops::OpDef& def = ops::lookup("aten.logsumexp.default");
  return ops::call1(def, {a, dims, keepdim});
}

Tensor cumsum(const Tensor& a, int64_t dim, std::optional<DType> dtype) {
  static const ops::OpDef& def = ops::lookup("aten.cumsum.default");
  return ops::call1(def, {a, dim, dtype ? ops::Arg(*dtype) : ops::Arg(std::monostate{})});
}

}  // namespace aotgrad
