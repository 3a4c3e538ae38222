// A number passed to an op by value (ATen's Scalar): bool, integer or floating.
#pragma once

#include <cstdint>
#include <string>

#include "aotgrad/dtype.h"

namespace aotgrad {

class Scalar {
 public:
  enum class Kind : uint8_t { boolean, integer, floating };

  Scalar() : Scalar(0.0) {}
  Scalar(double v) : kind_(Kind::floating), d_(v) {}                 // NOLINT: implicit by design
  Scalar(float v) : kind_(Kind::floating), d_(v) {}                  // NOLINT
  Scalar(int v) : kind_(Kind::integer), i_(v) {}                    // NOLINT
  Scalar(int64_t v) : kind_(Kind::integer), i_(v) {}                 // NOLINT
  Scalar(bool v) : kind_(Kind::boolean), i_(v ? 1 : 0) {}            // NOLINT

  Kind kind() const { return kind_; }
  bool is_floating() const { return kind_ == Kind::floating; }
  bool is_integral() const { return kind_ != Kind::floating; }
  double to_double() const { return kind_ == Kind::floating ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::floating ? static_cast<int64_t>(d_) : i_; }
  bool to_bool() const { return kind_ == Kind::floating ? d_ != 0.0 : i_ != 0; }
  // The dtype a 0-dim tensor holding this scalar would have ("wrapped number" rules).
  DType natural_dtype() const {
    return kind_ == Kind::floating ? DType::f64 : kind_ == Kind::integer ? DType::i64 : DType::b8;
  }
  bool operator==(const Scalar& o) const {
    return kind_ == o.kind_ && (kind_ == Kind::floating ? d_ == o.d_ : i_ == o.i_);
  }
  std::string to_string() const;

 private:
  Kind kind_;
  double d_ = 0.0;
  int64_t i_ = 0;
};

}  // namespace aotgrad
