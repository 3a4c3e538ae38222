// Devices, LibTorch's spelling (torch::Device, torch::kCPU, torch::cuda::is_available()).
// aotgrad runs on the CPU only: a Device may *name* CUDA (programs build one when
// cuda::is_available() says so), but every operation asked to put a tensor on it throws one line
// (check_cpu_device). All of it is immutable value types: safe to share between threads.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace aotgrad {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

class Device {
 public:
  // index -1 means "the current device of that type".
  Device(DeviceType type, int8_t index = -1) : type_(type), index_(index) {}  // NOLINT: implicit
  // "cpu", "cuda" or "cuda:N"; anything else throws std::invalid_argument naming the text.
  explicit Device(const std::string& text);

  DeviceType type() const { return type_; }
  int8_t index() const { return index_; }
  bool has_index() const { return index_ >= 0; }
  bool is_cpu() const { return type_ == DeviceType::CPU; }
  bool is_cuda() const { return type_ == DeviceType::CUDA; }
  std::string str() const;
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_;
  int8_t index_;
};

std::ostream& operator<<(std::ostream& os, const Device& d);

// Throws std::invalid_argument, one line naming `what` and the device, unless `d` is the CPU.
void check_cpu_device(const Device& d, std::string_view what);

namespace cuda {
// aotgrad has no CUDA backend.
inline bool is_available() { return false; }
inline int64_t device_count() { return 0; }
inline bool cudnn_is_available() { return false; }
}  // namespace cuda

}  // namespace aotgrad
