// The element-moving family: constant_pad_nd (pad or crop each trailing dim with a constant) and
// roll (rotate along dims). Both produce fresh tensors; their VJPs are the inverse movement of the
// gradient, as in derivatives.yaml: constant_pad_nd with the negated pads, roll with the negated
// shifts.
#include "kernels/transform.h"

#include <string>

#include "aotgrad/ops.h"
#include "kernels/copy.h"
#include "ops/families.h"
#include "ops/op.h"
#include "ops/row_helpers.h"
#include "tensor/checked_math.h"
#include "tensor/iter.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kPad = "aten.constant_pad_nd.default";
constexpr std::string_view kRoll = "aten.roll.default";

// ---- constant_pad_nd ----

IntList padded_sizes(const Tensor& self, const IntList& pad) {
  if (pad.size() % 2 != 0)
    fail(kPad, "the length of pad must be even (before/after pairs), got " +
                   std::to_string(pad.size()) + " entries");
  const size_t pairs = pad.size() / 2;
  if (pairs > self.sizes().size())
    fail(kPad, "pad " + shape_to_string(pad) + " pads " + std::to_string(pairs) +
                   " dims, but self " + shape_to_string(self.sizes()) + " has only " +
                   std::to_string(self.sizes().size()));
  IntList sizes = self.sizes();
  for (size_t i = 0; i < pairs; ++i) {
    const size_t d = sizes.size() - 1 - i;
    std::optional<int64_t> s = checked_add(sizes[d], pad[2 * i]);
    if (s) s = checked_add(*s, pad[2 * i + 1]);
    if (!s || *s < 0)
      fail(kPad, "dim " + std::to_string(d) + " of self " + shape_to_string(self.sizes()) +
                     " with padding " + std::to_string(pad[2 * i]) + " and " +
                     std::to_string(pad[2 * i + 1]) +
                     " gives a negative or unrepresentable size; crop at most the dim's size");
    sizes[d] = *s;
  }
  return sizes;
}

std::vector<TensorMeta> pad_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  return {TensorMeta::contiguous(padded_sizes(self, int_list_arg(a, 1)), self.dtype())};
}
std::vector<Tensor> pad_kernel(const OpArgs& a) {
  TensorMeta m = pad_meta(a)[0];
  return {kernels::constant_pad(tensor_arg(a, 0), int_list_arg(a, 1), scalar_arg(a, 2), m.sizes)};
}
std::vector<Tensor> pad_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  IntList negated = int_list_arg(c.args, 1);
  for (int64_t& p : negated) p = -p;
  return {constant_pad_nd(c.grad(), negated, 0)};
}

// ---- roll ----

struct RollPlan {
  IntList shifts;  // wrapped into [0, size), one per distinct dim
  IntList dims;
};

RollPlan roll_plan(const Tensor& self, const IntList& shifts, const IntList& dims) {
  if (shifts.empty()) fail(kRoll, "shifts must not be empty");
  if (!dims.empty() && dims.size() != shifts.size())
    fail(kRoll, "shifts and dims must align: " + std::to_string(shifts.size()) + " shifts, " +
                    std::to_string(dims.size()) + " dims");
  if (dims.empty() && shifts.size() != 1)
    fail(kRoll, "without dims, roll takes exactly one shift (of the flattened tensor), got " +
                    std::to_string(shifts.size()));
  RollPlan plan;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dim_arg(kRoll, dims[i], self.dim());
    const int64_t n = self.sizes()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;  // no overflow: |shifts[i] % n| < n
    // A dim named twice rolls by the sum of its shifts.
    auto it = std::find(plan.dims.begin(), plan.dims.end(), d);
    if (it != plan.dims.end()) {
      int64_t& acc = plan.shifts[it - plan.dims.begin()];
      acc = (acc + s) % n;
    } else {
      plan.dims.push_back(d);
      plan.shifts.push_back(s);
    }
  }
  return plan;
}

std::vector<TensorMeta> roll_meta(const OpArgs& a) {
  const Tensor& self = tensor_arg(a, 0);
  roll_plan(self, int_list_arg(a, 1), int_list_arg(a, 2));
  return {TensorMeta::contiguous(self.sizes(), self.dtype())};
}
std::vector<Tensor> roll_kernel(const OpArgs& a) {
  roll_meta(a);
  const Tensor& self = tensor_arg(a, 0);
  const IntList& dims = int_list_arg(a, 2);
  if (!dims.empty()) {
    RollPlan plan = roll_plan(self, int_list_arg(a, 1), dims);
    return {kernels::roll(self, plan.shifts, plan.dims)};
  }
  // No dims: roll the flattened tensor, then give it self's shape back.
  const int64_t n = self.numel();
  if (n == 0) return {make_tensor(self.sizes(), self.dtype())};
  Tensor flat = kernels::contiguous_copy(self, self.dtype());
  flat = make_view(flat, {n}, {1}, 0);
  const int64_t s = ((int_list_arg(a, 1)[0] % n) + n) % n;
  Tensor rolled = kernels::roll(flat, {s}, {0});
  return {make_view(rolled, self.sizes(), contiguous_strides(self.sizes()), 0)};
}
std::vector<Tensor> roll_vjp(const VjpContext& c) {
  if (!c.needs(0)) return {Tensor()};
  IntList negated = int_list_arg(c.args, 1);
  for (int64_t& s : negated) s = s == INT64_MIN ? INT64_MAX : -s;  // only the value mod n matters
  return {roll(c.grad(), negated, int_list_arg(c.args, 2))};
}

// clang-format off
const OpDef kRows[] = {
  {.name = kPad, .schema = "constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor",
   .meta = pad_meta, .kernel = pad_kernel, .vjp = pad_vjp, .recompute = Recompute::pointwise},
  {.name = kRoll, .schema = "roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor",
   .meta = roll_meta, .kernel = roll_kernel, .vjp = roll_vjp, .recompute = Recompute::pointwise},
};
// clang-format on

}  // namespace

std::span<const OpDef> transform_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

Tensor constant_pad_nd(const Tensor& self, const IntList& pad, const Scalar& value) {
  static const ops::OpDef& def = ops::lookup(ops::kPad);
  return ops::call1(def, {self, pad, value});
}
Tensor roll(const Tensor& self, const IntList& shifts, const IntList& dims) {
  static const ops::OpDef& def = ops::lookup(ops::kRoll);
  return ops::call1(def, {self, shifts, dims});
}

}  // namespace aotgrad
