// safetensors files in and out: the format Hugging Face's `safetensors` package (and through it
// PyTorch, JAX and most model hubs) exchanges weights in.
//
// A file is an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the tensors' raw
// little-endian bytes, C order, back to back. The JSON maps each tensor name to
// {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]} (offsets into the data part) and
// may hold "__metadata__": a map of strings to strings.
//
// Reading accepts what the reference reader (safetensors 0.4) accepts, for the dtypes aotgrad has:
// F32, F64, I64, BOOL, F16 and BF16. The tensors' byte ranges must cover the data part exactly,
// in order, without gaps or overlaps, and each must be exactly its shape times its dtype's size;
// a header is at most 100,000,000 bytes. Every check runs before any tensor is allocated, so a
// lying header costs nothing. Unknown keys inside a tensor's entry are ignored, as the reference
// reader ignores them; a repeated name is refused (the reference keeps one of them silently).
// Writing produces what the reference writer writes, byte for byte, for the same tensors and no
// metadata: JSON without spaces, tensors ordered by dtype (widest first) then name, the header
// padded with spaces to a multiple of 8 bytes.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad {

using NamedTensorList = std::vector<std::pair<std::string, Tensor>>;
using StringPairs = std::vector<std::pair<std::string, std::string>>;

struct SafetensorsContents {
  NamedTensorList tensors;  // fresh contiguous tensors, in the order of their data in the file
  StringPairs metadata;     // "__metadata__", in the order the file lists it
};

// Reads a safetensors file. Throws std::invalid_argument("safetensors file 'PATH': PROBLEM"),
// one line naming the tensor or field at fault, for a file that is missing, not a regular file,
// truncated, malformed, or holds a dtype aotgrad has no type for.
SafetensorsContents read_safetensors(const std::string& path);

// read_safetensors on the contents of a file already in memory; `source` names it in errors.
SafetensorsContents read_safetensors_bytes(std::string_view bytes,
                                           const std::string& source = "<memory>");

// Writes `tensors` (real, defined tensors with distinct names, none named "__metadata__", every
// name and metadata string valid UTF-8) and `metadata`. The file appears whole or not at all: it
// is written next to `path` and renamed over it. Throws std::invalid_argument naming the file and
// the tensor for a tensor or name it cannot write, std::runtime_error when the file cannot be
// written.
void write_safetensors(const std::string& path, const NamedTensorList& tensors,
                       const StringPairs& metadata = {});

// The bytes write_safetensors writes; `destination` names the target in errors.
std::string write_safetensors_bytes(const NamedTensorList& tensors,
                                    const StringPairs& metadata = {},
                                    const std::string& destination = "<memory>");

}  // namespace aotgrad
