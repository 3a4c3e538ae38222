// Small helpers the op and pipeline tests share: literal tensors, a deterministic input pattern,
// and reading an error message.
#pragma once

#include <cstdint>
#include <exception>
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

// The message of the exception `f` throws, or "" when it throws none.
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace aotgrad::testing
