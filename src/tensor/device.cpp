// Device parsing and printing, and the one check that keeps tensors on the CPU.
#include "aotgrad/torch/device.h"

#include <ostream>
#include <stdexcept>
#include <string>

#include "tensor/message_text.h"

namespace aotgrad {

Device::Device(const std::string& text) : type_(DeviceType::CPU), index_(-1) {
  auto bad = [&] {
    return std::invalid_argument("Device: expected \"cpu\", \"cuda\" or \"cuda:N\", got \"" +
                                 escape_for_message(text) + "\"");
  };
  const std::string kind = text.substr(0, text.find(':'));
  if (kind == "cpu")
    type_ = DeviceType::CPU;
  else if (kind == "cuda")
    type_ = DeviceType::CUDA;
  else
    throw bad();
  if (kind.size() == text.size()) return;
  const std::string digits = text.substr(kind.size() + 1);
  if (digits.empty() || digits.size() > 2 ||
      digits.find_first_not_of("0123456789") != std::string::npos)
    throw bad();
  index_ = static_cast<int8_t>(std::stoi(digits));
}

std::string Device::str() const {
  std::string s = is_cpu() ? "cpu" : "cuda";
  if (has_index()) s += ":" + std::to_string(index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) {
  return os << d.str();
}

void check_cpu_device(const Device& d, std::string_view what) {
  if (d.is_cpu()) return;
  throw std::invalid_argument(std::string(what) + ": device " + d.str() +
                              " is not available: aotgrad runs on the CPU only "
                              "(torch::cuda::is_available() is false); use torch::kCPU");
}

}  // namespace aotgrad
