// NumPy .npy files in and out: how the `aotgrad` program and the PyTorch-recorded fixtures under
// tests/data/ exchange tensors.
//
// Supported dtypes: f32, f64, i64, bool and f16 (NumPy's float32, float64, int64, bool,
// float16). bf16 has no NumPy dtype: write_npy rejects it (convert with `t.to(DType::f32)` first).
//
// Reading accepts exactly the files numpy.load (NumPy 1.24, allow_pickle=False) reads, when their
// dtype is one of ours: format versions 1.0, 2.0 and 3.0; the header dict as the Python literal
// NumPy evaluates (any key order, quotes, spacing, Python 2 `2L` ints, every spelling NumPy
// accepts for the dtype: '<f4', 'f4', '|f4', 'float32', 'f', ...); little- and big-endian data
// (converted); C and Fortran order (Fortran gives a contiguous tensor with the same values);
// 0-dim and empty arrays; bytes after the data (ignored, as NumPy does). The one exception: a
// negative dimension, which NumPy infers from the file size by accident, is refused. Writing
// produces what np.save writes, byte for byte: version 1.0, C order, the elements of a
// non-contiguous tensor in logical order.
#pragma once

#include <string>
#include <string_view>

#include "aotgrad/tensor.h"

namespace aotgrad {

// Reads a .npy file into a fresh contiguous tensor. Throws std::invalid_argument("npy file
// 'PATH': PROBLEM"), one line, for a file NumPy would refuse or whose dtype aotgrad has no type
// for: missing, not a regular file (a directory, /dev/zero, a FIFO: refused before reading), bad
// magic or version, a header NumPy refuses, or less data than the header promises (checked
// against the file size before anything is allocated or read).
Tensor read_npy(const std::string& path);

// read_npy on the contents of a file already in memory; `source` names it in errors.
Tensor read_npy_bytes(std::string_view bytes, const std::string& source = "<memory>");

// Writes `t` (a real, not fake, tensor) as a .npy file. Throws std::invalid_argument naming the
// file for undefined, fake and bf16 tensors, more than 32 dims (NumPy's limit) and shapes whose
// byte size does not fit 64 bits; std::runtime_error when the file cannot be written.
void write_npy(const std::string& path, const Tensor& t);

// The bytes write_npy writes; `destination` names the target in errors.
std::string write_npy_bytes(const Tensor& t, const std::string& destination = "<memory>");

}  // namespace aotgrad
