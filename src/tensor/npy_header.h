// The header dict of a .npy file, read the way NumPy 1.24's numpy.load reads it.
//
// NumPy evaluates the header as a Python literal (ast.literal_eval, after dropping Python 2's 'L'
// suffixes in format versions 1.0 and 2.0), then requires a dict with exactly the keys 'descr',
// 'fortran_order' and 'shape', a tuple of ints for the shape, a bool for the order, and a descr
// numpy.dtype() understands. parse_npy_header does the same for the dtypes aotgrad has, so a file
// is read here exactly when numpy.load reads it (tests/data/npy/oracle/ holds NumPy's verdicts on
// a generated corpus; tools/npy_oracle.py makes it). Where it deliberately refuses what NumPy
// reads, the header comment in npy_header.cpp says so.
#pragma once

#include <cstddef>
#include <string_view>

#include "aotgrad/tensor.h"

namespace aotgrad::npy {

// numpy.lib.format._MAX_HEADER_SIZE: numpy.load refuses longer headers (unless allow_pickle).
constexpr size_t kMaxHeaderChars = 10000;
// NPY_MAXDIMS in NumPy 1.x.
constexpr size_t kMaxDims = 32;

struct NpyHeader {
  DType dtype = DType::f32;
  bool big_endian = false;  // elements stored most significant byte first ('>f4')
  bool fortran_order = false;
  IntList shape;
  int64_t nbytes = 0;  // numel(shape) * itemsize(dtype); fits int64 (checked)
};

// Reads the header text of a file of format version `major` (1, 2 or 3; the bytes after the
// header-length field, padding included). Throws std::invalid_argument with the problem (not the
// file name: the caller adds it) when NumPy would refuse the header or aotgrad has no type for
// its dtype. The message is one printable line; header bytes in it are escaped. Thread-safe.
NpyHeader parse_npy_header(std::string_view text, int major);

}  // namespace aotgrad::npy
