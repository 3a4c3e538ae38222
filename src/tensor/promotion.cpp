#include "tensor/promotion.h"

#include <stdexcept>

namespace aotgrad {
namespace {

// bool < integral < floating, the order in which a lower-priority class may still win.
int category(DType t) {
  return t == DType::b8 ? 0 : is_integral(t) ? 1 : 2;
}

void promote_into(std::optional<DType>& slot, DType t) {
  slot = slot ? promote_types(*slot, t) : t;
}

// c10's combine_categories: `higher` is the result of the higher-priority class.
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower) return higher;
  if (category(*higher) == 2) return higher;
  // A lower class lifts the category (bool -> anything, int -> float) but keeps its own width.
  if (*higher == DType::b8 || category(*lower) == 2) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

ResultTypeState& ResultTypeState::add(const Tensor& t) {
  if (!t.defined()) return *this;
  promote_into(t.dim() == 0 ? zero_dim_ : dim_, t.dtype());
  return *this;
}

ResultTypeState& ResultTypeState::add(const Scalar& s) {
  // A floating number carries no width of its own: it takes the default float (torch does the
  // same for Python floats), so f16 stays f16 and i64 becomes f32, not f64.
  promote_into(wrapped_, s.is_floating() ? kDefaultFloat : s.natural_dtype());
  return *this;
}

DType ResultTypeState::result() const {
  std::optional<DType> r = combine(dim_, combine(zero_dim_, wrapped_));
  if (!r) throw std::logic_error("result_type: no operands were given");
  return *r;
}

DType result_type(const Tensor& a, const Tensor& b) {
  return ResultTypeState().add(a).add(b).result();
}

DType result_type(const Tensor& a, const Scalar& b) {
  return ResultTypeState().add(a).add(b).result();
}

DType result_type(std::span<const Tensor> tensors, std::span<const Scalar> scalars) {
  ResultTypeState state;
  for (const Tensor& t : tensors) state.add(t);
  for (const Scalar& s : scalars) state.add(s);
  return state.result();
}

DType float_op_dtype(DType t) {
  return is_floating(t) ? t : kDefaultFloat;
}

bool can_cast(DType from, DType to) {
  return category(from) <= category(to);
}

DType compute_dtype(DType t) {
  return t == DType::f16 || t == DType::bf16 ? DType::f32 : t;
}

}  // namespace aotgrad
