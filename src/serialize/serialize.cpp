// torch::save / torch::load for tensors and modules (serialize.h); optimizers are in
// optimizer_checkpoint.cpp. Each load reads the whole file, checks every entry against the
// target, and only then writes values: a failed load leaves the target as it was.
#include "aotgrad/serialize.h"

#include <stdexcept>
#include <string_view>

#include "aotgrad/autograd.h"
#include "aotgrad/safetensors.h"
#include "serialize/checkpoint_common.h"

namespace aotgrad {
namespace checkpoint {

[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  throw std::invalid_argument("checkpoint '" + path + "': " + problem);
}

std::string describe(const Tensor& t) {
  return std::string(dtype_name(t.dtype())) + shape_to_string(t.sizes());
}

std::string quoted(std::string_view name) {
  std::string out = "'";
  for (char c : name) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

const std::string* find_metadata(const SafetensorsContents& c, std::string_view key) {
  for (const auto& [k, v] : c.metadata)
    if (k == key) return &v;
  return nullptr;
}

// "a module", "an optimizer", ... for the format names this file writes.
std::string kind_of(std::string_view format) {
  if (format == kModuleFormat) return "a module";
  if (format == kTensorFormat) return "a tensor";
  if (format == kTensorListFormat) return "a tensor list";
  if (format == kOptimizerFormat) return "an optimizer";
  return "a " + quoted(format);
}

SafetensorsContents read(const std::string& path, std::string_view expected_format,
                         const std::string& expected_what) {
  SafetensorsContents c = read_safetensors(path);
  const std::string* format = find_metadata(c, kFormatKey);
  // Files without our format key (PyTorch's safetensors writer, other tools) are accepted for
  // tensors and modules; their entries are then checked one by one.
  if (format && *format != expected_format)
    fail(path, "is " + kind_of(*format) + " checkpoint, expected " + expected_what + " checkpoint");
  if (!format && expected_format == kOptimizerFormat)
    fail(path, "is not an optimizer checkpoint (its metadata has no \"" + std::string(kFormatKey) +
                   "\": \"" + std::string(kOptimizerFormat) + "\")");
  return c;
}

void check_like(const std::string& path, const std::string& name, const Tensor& found,
                const Tensor& expected, const char* owner) {
  if (found.dtype() != expected.dtype() || found.sizes() != expected.sizes())
    fail(path, "tensor " + quoted(name) + " is " + describe(found) + " but " + owner + " is " +
                   describe(expected));
}

}  // namespace checkpoint

namespace {

using checkpoint::fail;
using checkpoint::quoted;

Tensor for_writing(const Tensor& t, const std::string& path, const std::string& name) {
  if (!t.defined()) fail(path, "cannot save tensor " + quoted(name) + ": it is undefined");
  return t.detach();
}

}  // namespace

void save(const Tensor& tensor, const std::string& path) {
  write_safetensors(path, {{"tensor", for_writing(tensor, path, "tensor")}},
                    {{checkpoint::kFormatKey, std::string(checkpoint::kTensorFormat)}});
}

void save(const std::vector<Tensor>& tensors, const std::string& path) {
  NamedTensorList named;
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::string name = std::to_string(i);
    named.emplace_back(name, for_writing(tensors[i], path, name));
  }
  write_safetensors(path, named,
                    {{checkpoint::kFormatKey, std::string(checkpoint::kTensorListFormat)}});
}

void load(Tensor& tensor, const std::string& path) {
  SafetensorsContents c = checkpoint::read(path, checkpoint::kTensorFormat, "a tensor");
  if (c.tensors.size() != 1)
    fail(path, "holds " + std::to_string(c.tensors.size()) + " tensors, expected one");
  tensor = c.tensors.front().second;
}

void load(std::vector<Tensor>& tensors, const std::string& path) {
  SafetensorsContents c = checkpoint::read(path, checkpoint::kTensorListFormat, "a tensor list");
  std::vector<Tensor> loaded(c.tensors.size());
  for (auto& [name, t] : c.tensors) {
    size_t index = 0;
    bool numeric = !name.empty() && name.size() < 10 && (name == "0" || name[0] != '0');
    for (char ch : name) numeric = numeric && ch >= '0' && ch <= '9';
    if (numeric) index = std::stoul(name);
    if (!numeric || index >= loaded.size())
      fail(path, "unexpected tensor " + quoted(name) + "; a list of " +
                     std::to_string(loaded.size()) + " tensors names them \"0\" to \"" +
                     std::to_string(loaded.size() - 1) + "\"");
    loaded[index] = t;
  }
  // Names are distinct (the reader refuses repeats), so every index is filled.
  tensors = std::move(loaded);
}

void save(const nn::Module& module, const std::string& path) {
  NamedTensorList named;
  for (const auto& [name, t] : module.named_parameters())
    named.emplace_back(name, for_writing(t, path, name));
  for (const auto& [name, t] : module.named_buffers())
    named.emplace_back(name, for_writing(t, path, name));
  write_safetensors(path, named,
                    {{checkpoint::kFormatKey, std::string(checkpoint::kModuleFormat)}});
}

void load(nn::Module& module, const std::string& path) {
  SafetensorsContents c = checkpoint::read(path, checkpoint::kModuleFormat, "a module");
  nn::NamedTensors targets = module.named_parameters();
  for (auto& entry : module.named_buffers()) targets.push_back(entry.pair());
  std::vector<std::pair<Tensor, const Tensor*>> copies;  // target, value from the file
  std::vector<bool> used(c.tensors.size(), false);
  for (const auto& [name, target] : targets) {
    size_t i = 0;
    while (i < c.tensors.size() && c.tensors[i].first != name) ++i;
    if (i == c.tensors.size())
      fail(path, "has no tensor " + quoted(name) + " (the module's " +
                     checkpoint::describe(target) + ")");
    checkpoint::check_like(path, name, c.tensors[i].second, target, "the module's");
    used[i] = true;
    copies.emplace_back(target, &c.tensors[i].second);
  }
  for (size_t i = 0; i < c.tensors.size(); ++i)
    if (!used[i])
      fail(path, "unexpected tensor " + quoted(c.tensors[i].first) +
                     ": the module has no parameter or buffer of that name");
  NoGradGuard no_grad;
  for (auto& [target, value] : copies) target.copy_(*value);
}

}  // namespace aotgrad
