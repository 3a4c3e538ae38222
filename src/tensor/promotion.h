// Type promotion: which dtype an op computes in and returns, exactly as torch.result_type.
//
// Operands fall into three priority classes: tensors with dim > 0, 0-dim tensors, and wrapped
// numbers (Scalars). A lower class only changes the result when it is of a higher *category*
// (bool < integral < floating) than every higher class; within a class dtypes combine with
// promote_types. Hence
//   f32[3] + f64[] -> f32        (the 0-dim f64 is floating like f32: same category, ignored)
//   i64[3] + 2.5   -> f32        (a floating Scalar brings the default float, not f64)
//   b8[3]  + 1     -> i64        (an integral Scalar lifts bool to its category)
//   i64[3] + f64[] -> f64        (a 0-dim tensor of a higher category keeps its own width)
// Only dtype and dim are read, so fake (metadata-only) tensors work; undefined tensors are skipped.
#pragma once

#include <optional>
#include <span>

#include "aotgrad/tensor.h"

namespace aotgrad {

// Accumulates operands one at a time (c10's ResultTypeState); result() combines the classes.
class ResultTypeState {
 public:
  ResultTypeState& add(const Tensor& t);
  ResultTypeState& add(const Scalar& s);
  // Throws std::logic_error when no operand was added.
  DType result() const;

 private:
  std::optional<DType> dim_;       // tensors with dim > 0
  std::optional<DType> zero_dim_;  // 0-dim tensors
  std::optional<DType> wrapped_;   // Scalars
};

DType result_type(const Tensor& a, const Tensor& b);
DType result_type(const Tensor& a, const Scalar& b);
DType result_type(std::span<const Tensor> tensors, std::span<const Scalar> scalars = {});

// The dtype a "float op" (true division, exp, sqrt, ...) returns for input dtype `t`: integral and
// bool become the default float, floating types stay as they are.
DType float_op_dtype(DType t);

// torch.can_cast: whether a value of dtype `from` may be written into a tensor of dtype `to`
// without dropping a category (float -> int and int -> bool are refused). In-place ops check it.
bool can_cast(DType from, DType to);

// The dtype kernels do arithmetic in for results of dtype `t`: f16 and bf16 compute in f32.
DType compute_dtype(DType t);

}  // namespace aotgrad
