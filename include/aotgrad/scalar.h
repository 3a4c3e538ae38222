// A number passed to an op by value (ATen's Scalar): bool, integer or floating.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <type_traits>

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

  // LibTorch's spellings.
  double toDouble() const { return to_double(); }
  float toFloat() const { return static_cast<float>(to_double()); }
  int64_t toLong() const { return to_int(); }
  int toInt() const { return static_cast<int>(to_int()); }
  bool toBool() const { return to_bool(); }
  bool isFloatingPoint() const { return is_floating(); }
  bool isIntegral(bool include_bool) const {
    return kind_ == Kind::integer || (include_bool && kind_ == Kind::boolean);
  }
  bool isBoolean() const { return kind_ == Kind::boolean; }
  // The value converted to T (double, float, int64_t, int or bool), as Scalar::to<T>.
  template <typename T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(to_double());
    else return static_cast<T>(to_int());
  }

 private:
  Kind kind_;
  double d_ = 0.0;
  int64_t i_ = 0;
};

std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace aotgrad
