// What serialize.cpp and optimizer_checkpoint.cpp share: the format names written under the
// "format" metadata key, reading a file with its kind checked, and the one-line errors.
#pragma once

#include <string>
#include <string_view>

#include "aotgrad/safetensors.h"
#include "aotgrad/tensor.h"

namespace aotgrad::checkpoint {

inline constexpr const char* kFormatKey = "format";
inline constexpr std::string_view kTensorFormat = "aotgrad.tensor";
inline constexpr std::string_view kTensorListFormat = "aotgrad.tensor_list";
inline constexpr std::string_view kModuleFormat = "aotgrad.module";
inline constexpr std::string_view kOptimizerFormat = "aotgrad.optimizer";

// Throws std::invalid_argument("checkpoint 'PATH': PROBLEM").
[[noreturn]] void fail(const std::string& path, const std::string& problem);
// "f32[2, 3]".
std::string describe(const Tensor& t);
// 'name' with control bytes escaped as \xNN.
std::string quoted(std::string_view name);
const std::string* find_metadata(const SafetensorsContents& c, std::string_view key);
// Reads `path` (safetensors errors pass through: they name the file) and refuses a file whose
// format key names another kind; a file without one is refused only for optimizers.
SafetensorsContents read(const std::string& path, std::string_view expected_format,
                         const std::string& expected_what);
// Fails unless `found` has `expected`'s dtype and shape; `owner` names
// `expected` ("the module's", "parameter 1 of group 0").
void check_like(const std::string& path, const std::string& name, const Tensor& found,
                const Tensor& expected, const char* owner);

}  // namespace aotgrad::checkpoint
