// Element types. f16 and bf16 are storage types reserved for later: kernels compute in f32.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace aotgrad {

enum class DType : uint8_t { f32, f64, i64, b8, f16, bf16 };

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i64: return 8;
    case DType::b8: return 1;
    case DType::f16: return 2;
    case DType::bf16: return 2;
  }
  return 0;
}

constexpr bool is_floating(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}

// Short names used by the graph text format: "f32", "f64", "i64", "b8", "f16", "bf16".
std::string_view dtype_name(DType t);
// Inverse of dtype_name; throws std::invalid_argument naming the text for an unknown name.
DType parse_dtype(std::string_view name);

// PyTorch's promote_types for two tensor dtypes (bool < int < float; wider float wins).
DType promote_types(DType a, DType b);

constexpr DType kDefaultFloat = DType::f32;

}  // namespace aotgrad
