#include <cmath>
#include <cstdio>
#include <ostream>
#include <stdexcept>
#include <string>

#include "aotgrad/dtype.h"
#include "aotgrad/scalar.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad {

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
    case DType::b8: return "b8";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
  }
  return "?";
}

DType parse_dtype(std::string_view name) {
  for (DType t : {DType::f32, DType::f64, DType::i64, DType::b8, DType::f16, DType::bf16, DType::u8,
                  DType::i32})
    if (dtype_name(t) == name) return t;
  throw std::invalid_argument("unknown dtype '" + std::string(name) +
                              "' (expected f32, f64, i64, i32, u8, b8, f16 or bf16)");
}

namespace {
int category(DType t) { return t == DType::b8 ? 0 : is_integral(t) ? 1 : 2; }
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  int ca = category(a), cb = category(b);
  if (ca != cb) return ca > cb ? a : b;
  if (ca == 1) {
    // Every signed type here is wider than u8, so the wider one holds both (u8 + i32 -> i32).
    return itemsize(a) >= itemsize(b) && a != DType::u8 ? a : b;
  }
  // both floating and different
  if (a == DType::f64 || b == DType::f64) return DType::f64;
  if (a == DType::f32 || b == DType::f32) return DType::f32;
  return DType::f32;  // f16 with bf16 promotes to f32, as in PyTorch
}

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::boolean: return i_ ? "true" : "false";
    case Kind::integer: return std::to_string(i_);
    case Kind::floating: {
      if (std::isinf(d_)) return d_ > 0 ? "inf" : "-inf";
      if (std::isnan(d_)) return "nan";
      // Shortest text that reads back to the same double, always with a '.' or exponent.
      char buf[40];
      for (int prec = 1; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, d_);
        if (std::strtod(buf, nullptr) == d_) break;
      }
      std::string s = buf;
      if (s.find_first_of(".en") == std::string::npos) s += ".0";
      return s;
    }
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) { return os << s.to_string(); }

Half::Half(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = static_cast<int32_t>((x >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = x & 0x7FFFFF;
  if (((x >> 23) & 0xFF) == 0xFF) {
    bits = static_cast<uint16_t>(sign | 0x7C00 | (mant ? 0x200 : 0));
  } else if (exp >= 31) {
    bits = static_cast<uint16_t>(sign | 0x7C00);
  } else if (exp <= 0) {
    if (exp < -10) {
      bits = static_cast<uint16_t>(sign);
    } else {
      mant |= 0x800000;
      uint32_t shift = static_cast<uint32_t>(14 - exp);
      uint32_t half_mant = mant >> shift;
      uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
      if (rem > halfway || (rem == halfway && (half_mant & 1))) ++half_mant;
      bits = static_cast<uint16_t>(sign | half_mant);
    }
  } else {
    uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;
    bits = static_cast<uint16_t>(half);
  }
}

Half::operator float() const {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000) << 16;
  uint32_t exp = (bits >> 10) & 0x1F, mant = bits & 0x3FF;
  uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else {
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while (!(mant & 0x400));
      x = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3FF) << 13);
    }
  } else if (exp == 31) {
    x = sign | 0x7F800000 | (mant << 13);
  } else {
    x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

}  // namespace aotgrad
