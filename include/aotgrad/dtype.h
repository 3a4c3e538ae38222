// Element types. f16 and bf16 are storage types: kernels compute in f32. u8 and i32 are
// LibTorch's kByte and kInt: integral types that compute in their own width.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace aotgrad {

enum class DType : uint8_t { f32, f64, i64, b8, f16, bf16, u8, i32 };

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i64: return 8;
    case DType::b8: return 1;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::u8: return 1;
    case DType::i32: return 4;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

// Integral types other than bool (u8, i32, i64).
constexpr bool is_integral(DType t) { return t == DType::u8 || t == DType::i32 || t == DType::i64; }

// Short names used by the graph text format: "f32", "f64", "i64", "b8", "f16", "bf16", "u8",
// "i32".
std::string_view dtype_name(DType t);
// Inverse of dtype_name; throws std::invalid_argument naming the text for an unknown name.
DType parse_dtype(std::string_view name);

// PyTorch's promote_types for two tensor dtypes (bool < int < float; wider float wins).
DType promote_types(DType a, DType b);

constexpr DType kDefaultFloat = DType::f32;

// LibTorch's ScalarType constants (torch::kFloat, torch::kLong, ...).
constexpr DType kFloat = DType::f32;
constexpr DType kFloat32 = DType::f32;
constexpr DType kDouble = DType::f64;
constexpr DType kFloat64 = DType::f64;
constexpr DType kHalf = DType::f16;
constexpr DType kFloat16 = DType::f16;
constexpr DType kBFloat16 = DType::bf16;
constexpr DType kLong = DType::i64;
constexpr DType kInt64 = DType::i64;
constexpr DType kInt = DType::i32;
constexpr DType kInt32 = DType::i32;
constexpr DType kByte = DType::u8;
constexpr DType kUInt8 = DType::u8;
constexpr DType kBool = DType::b8;

}  // namespace aotgrad
