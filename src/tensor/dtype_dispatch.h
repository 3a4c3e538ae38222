// Compile-time dispatch over DType: visit_dtype(t, [&](auto tag) { using T = decltype(tag)::type; }).
// f16 and bf16 are storage-only types: they convert to and from float.
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "aotgrad/dtype.h"

namespace aotgrad {

struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f);
  operator float() const;  // NOLINT: implicit widening like a built-in type
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7FFF + ((u >> 16) & 1);  // round to nearest even
    bits = static_cast<uint16_t>(u >> 16);
  }
  operator float() const {  // NOLINT
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
};

template <typename T>
struct TypeTag {
  using type = T;
};

template <typename F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: return f(TypeTag<float>{});
    case DType::f64: return f(TypeTag<double>{});
    case DType::i64: return f(TypeTag<int64_t>{});
    case DType::b8: return f(TypeTag<bool>{});
    case DType::f16: return f(TypeTag<Half>{});
    case DType::bf16: return f(TypeTag<BFloat16>{});
    case DType::u8: return f(TypeTag<uint8_t>{});
    case DType::i32: return f(TypeTag<int32_t>{});
  }
  throw std::logic_error("bad dtype");
}

template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<bool>() { return DType::b8; }
template <> constexpr DType dtype_of<Half>() { return DType::f16; }
template <> constexpr DType dtype_of<BFloat16>() { return DType::bf16; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }

// Converts between element types the way a C cast would, through float for the 16-bit types.
template <typename To, typename From>
inline To convert(From v) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace aotgrad
