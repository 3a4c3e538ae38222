// Small helpers the op and pipeline tests share: literal tensors, a deterministic input pattern,
// and reading an error message.
#pragma once

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::testing {

inline Tensor f64(std::vector<double> v, const IntList& sizes) {
  return from_vector(v, sizes);
}

inline Tensor i64(std::vector<int64_t> v, const IntList& sizes) {
  return from_vector(v, sizes);
}

// ((i * mul) % mod) / 50 - 1 in row-major order: inputs that torch literals can be recomputed
// from.
inline Tensor pattern(const IntList& sizes, int64_t mul = 37, int64_t mod = 101,
                      DType dtype = DType::f64) {
  std::vector<double> v(static_cast<size_t>(numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>((static_cast<int64_t>(i) * mul) % mod) / 50.0 - 1.0;
  Tensor t = from_vector(v, sizes);
  return dtype == DType::f64 ? t : t.to(dtype);
}

// 0, 1, 2, ... (from `start`) in row-major order, f32.
inline Tensor iota(const IntList& sizes, float start = 0) {
  std::vector<float> v(static_cast<size_t>(numel_of(sizes)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return from_vector(v, sizes);
}

inline std::vector<float> values(const Tensor& t) {
  return t.to_vector<float>();
}

// The message of the `Exception` that `f` throws, or "" when it throws none (any other exception
// propagates).
template <typename Exception = std::exception, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Exception& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace aotgrad::testing
