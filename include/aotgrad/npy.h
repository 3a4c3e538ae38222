// NumPy .npy files in and out: how the `aotgrad` program and the PyTorch-recorded fixtures under
// tests/data/ exchange tensors.
//
// Supported dtypes: f32 '<f4', f64 '<f8', i64 '<i8', bool '|b1', f16 '<f2'. bf16 has no NumPy
// dtype: write_npy rejects it (convert with `t.to(DType::f32)` first). Reading accepts format
// versions 1.0, 2.0 and 3.0, C and Fortran order; writing produces version 1.0 (2.0 when the header
// needs it), C order, the elements of a non-contiguous tensor in logical order.
#pragma once

#include <string>

#include "aotgrad/tensor.h"

namespace aotgrad {

// Reads a .npy file into a fresh contiguous tensor. Throws std::invalid_argument naming the file
// and the problem (missing file, bad magic, bad header, big-endian or unsupported dtype, truncated
// data).
Tensor read_npy(const std::string& path);

// Writes `t` (a real, not fake, tensor) as a .npy file. Throws std::invalid_argument naming the
// file for bf16 and fake tensors, std::runtime_error when the file cannot be written.
void write_npy(const std::string& path, const Tensor& t);

}  // namespace aotgrad
