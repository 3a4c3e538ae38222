// The comparison and selection family: eq / gt / lt (b8 results, no gradient) and where.
//
// Comparisons promote both operands to result_type(self, other) before comparing (so an i64
// tensor compared with 2.5 compares in f32, as torch does) and return b8. where promotes self and
// other the same way; condition must be b8.
#include <stdexcept>
#include <string>

#include "aotgrad/ops.h"
#include "kernels/pointwise.h"
#include "ops/families.h"
#include "tensor/iter.h"
#include "tensor/promotion.h"

namespace aotgrad::ops {
namespace {

// Broadcast of `shapes`, or an error naming the op and each argument's shape.
IntList broadcast_named(std::string_view op,
                        std::initializer_list<std::pair<const char*, IntList>> shapes) {
  IntList out;
  for (const auto& [name, sizes] : shapes) {
    try {
      out = broadcast_shapes(out, sizes);
    } catch (const std::invalid_argument&) {
      std::string msg = std::string(op) + ": the shapes of";
      for (const auto& [n, s] : shapes) msg += std::string(" ") + n + " " + shape_to_string(s);
      throw std::invalid_argument(msg + " do not broadcast (" + name +
                                  " disagrees); make each trailing size equal or 1");
    }
  }
  return out;
}

template <const char* kName>
std::vector<TensorMeta> compare_tensor_meta(const OpArgs& a) {
  const Tensor &self = tensor_arg(a, 0), &other = tensor_arg(a, 1);
  return {TensorMeta::contiguous(
      broadcast_named(kName, {{"self", self.sizes()}, {"other", other.sizes()}}), DType::b8)};
}

std::vector<TensorMeta> compare_scalar_meta(const OpArgs& a) {
  return {TensorMeta::contiguous(tensor_arg(a, 0).sizes(), DType::b8)};
}

template <const char* kName, kernels::Compare op>
std::vector<Tensor> compare_tensor_kernel(const OpArgs& a) {
  compare_tensor_meta<kName>(a);
  return {kernels::compare(op, tensor_arg(a, 0), tensor_arg(a, 1))};
}

template <kernels::Compare op>
std::vector<Tensor> compare_scalar_kernel(const OpArgs& a) {
  return {kernels::compare(op, tensor_arg(a, 0), scalar_arg(a, 1))};
}

constexpr char kEq[] = "aten.eq.Tensor";
constexpr char kGt[] = "aten.gt.Tensor";
constexpr char kLt[] = "aten.lt.Tensor";
constexpr char kNe[] = "aten.ne.Tensor";
constexpr char kGe[] = "aten.ge.Tensor";
constexpr char kLe[] = "aten.le.Tensor";
constexpr char kWhere[] = "aten.where.self";

std::vector<TensorMeta> where_meta(const OpArgs& a) {
  const Tensor &cond = tensor_arg(a, 0), &self = tensor_arg(a, 1), &other = tensor_arg(a, 2);
  if (cond.dtype() != DType::b8)
    throw std::invalid_argument(std::string(kWhere) +
                                ": condition must be a b8 (bool) tensor, got " +
                                std::string(dtype_name(cond.dtype())) +
                                "; build it with a comparison (gt, lt, eq) or .to(b8)");
  IntList sizes = broadcast_named(
      kWhere, {{"condition", cond.sizes()}, {"self", self.sizes()}, {"other", other.sizes()}});
  return {TensorMeta::contiguous(sizes, result_type(self, other))};
}

std::vector<Tensor> where_kernel(const OpArgs& a) {
  where_meta(a);
  return {kernels::where(tensor_arg(a, 0), tensor_arg(a, 1), tensor_arg(a, 2))};
}

// The gradient for `input`: summed over broadcast dims, cast to its dtype (see pointwise.cpp).
Tensor grad_for(const Tensor& g, const Tensor& input) {
  Tensor r = g.sizes() == input.sizes() ? g : sum_to_size(g, input.sizes());
  return r.dtype() == input.dtype() ? r : to(r, input.dtype());
}

// PyTorch: self gets where(condition, grad, 0), other where(condition, 0, grad); condition none.
std::vector<Tensor> where_vjp(const VjpContext& c) {
  const Tensor& cond = c.input(0);
  Tensor zero = (c.needs(1) || c.needs(2)) ? zeros({}, c.grad().dtype()) : Tensor();
  Tensor g_self = c.needs(1) ? grad_for(where(cond, c.grad(), zero), c.input(1)) : Tensor();
  Tensor g_other = c.needs(2) ? grad_for(where(cond, zero, c.grad()), c.input(2)) : Tensor();
  return {Tensor(), g_self, g_other};
}

template <const char* kName, kernels::Compare op>
constexpr OpDef compare_tensor_row(std::string_view schema, std::string_view expr) {
  return {.name = kName,
          .schema = schema,
          .meta = compare_tensor_meta<kName>,
          .kernel = compare_tensor_kernel<kName, op>,
          .recompute = Recompute::pointwise,
          .fusion_expr = expr};
}

template <kernels::Compare op>
constexpr OpDef compare_scalar_row(std::string_view name, std::string_view schema,
                                   std::string_view expr) {
  return {.name = name,
          .schema = schema,
          .meta = compare_scalar_meta,
          .kernel = compare_scalar_kernel<op>,
          .recompute = Recompute::pointwise,
          .fusion_expr = expr};
}

const OpDef kRows[] = {
    compare_tensor_row<kEq, kernels::Compare::eq>("eq.Tensor(Tensor self, Tensor other) -> Tensor",
                                                  "a == b"),
    compare_scalar_row<kernels::Compare::eq>(
        "aten.eq.Scalar", "eq.Scalar(Tensor self, Scalar other) -> Tensor", "a == s0"),
    compare_tensor_row<kGt, kernels::Compare::gt>("gt.Tensor(Tensor self, Tensor other) -> Tensor",
                                                  "a > b"),
    compare_scalar_row<kernels::Compare::gt>(
        "aten.gt.Scalar", "gt.Scalar(Tensor self, Scalar other) -> Tensor", "a > s0"),
    compare_tensor_row<kLt, kernels::Compare::lt>("lt.Tensor(Tensor self, Tensor other) -> Tensor",
                                                  "a < b"),
    compare_scalar_row<kernels::Compare::lt>(
        "aten.lt.Scalar", "lt.Scalar(Tensor self, Scalar other) -> Tensor", "a < s0"),
    compare_tensor_row<kNe, kernels::Compare::ne>("ne.Tensor(Tensor self, Tensor other) -> Tensor",
                                                  "a != b"),
    compare_scalar_row<kernels::Compare::ne>(
        "aten.ne.Scalar", "ne.Scalar(Tensor self, Scalar other) -> Tensor", "a != s0"),
    compare_tensor_row<kGe, kernels::Compare::ge>("ge.Tensor(Tensor self, Tensor other) -> Tensor",
                                                  "a >= b"),
    compare_scalar_row<kernels::Compare::ge>(
        "aten.ge.Scalar", "ge.Scalar(Tensor self, Scalar other) -> Tensor", "a >= s0"),
    compare_tensor_row<kLe, kernels::Compare::le>("le.Tensor(Tensor self, Tensor other) -> Tensor",
                                                  "a <= b"),
    compare_scalar_row<kernels::Compare::le>(
        "aten.le.Scalar", "le.Scalar(Tensor self, Scalar other) -> Tensor", "a <= s0"),
    {.name = kWhere,
     .schema = "where.self(Tensor condition, Tensor self, Tensor other) -> Tensor",
     .meta = where_meta,
     .kernel = where_kernel,
     .vjp = where_vjp,
     .saves = {.inputs = bit(0)},
     .recompute = Recompute::pointwise,
     .fusion_expr = "a ? b : c"},
};

}  // namespace

std::span<const OpDef> compare_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor eq(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.eq.Tensor");
  return ops::call1(def, {a, b});
}
Tensor eq(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.eq.Scalar");
  return ops::call1(def, {a, b});
}
Tensor gt(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.gt.Tensor");
  return ops::call1(def, {a, b});
}
Tensor gt(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.gt.Scalar");
  return ops::call1(def, {a, b});
}
Tensor lt(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.lt.Tensor");
  return ops::call1(def, {a, b});
}
Tensor lt(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.lt.Scalar");
  return ops::call1(def, {a, b});
}
Tensor ne(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.ne.Tensor");
  return ops::call1(def, {a, b});
}
Tensor ne(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.ne.Scalar");
  return ops::call1(def, {a, b});
}
Tensor ge(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.ge.Tensor");
  return ops::call1(def, {a, b});
}
Tensor ge(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.ge.Scalar");
  return ops::call1(def, {a, b});
}
Tensor le(const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.le.Tensor");
  return ops::call1(def, {a, b});
}
Tensor le(const Tensor& a, const Scalar& b) {
  static const ops::OpDef& def = ops::lookup("aten.le.Scalar");
  return ops::call1(def, {a, b});
}
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  static const ops::OpDef& def = ops::lookup("aten.where.self");
  return ops::call1(def, {condition, a, b});
}

}  // namespace aotgrad
