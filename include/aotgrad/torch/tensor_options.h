// TensorOptions, LibTorch's bundle of factory options: torch::dtype(kFloat).requires_grad(true),
// .device(kCPU). Every factory of aotgrad/torch/factories.h takes one. A value type: safe to
// share between threads.
#pragma once

#include <optional>

#include "aotgrad/dtype.h"
#include "aotgrad/torch/device.h"

namespace aotgrad {

class TensorOptions {
 public:
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}      // NOLINT: implicit, as LibTorch's
  TensorOptions(Device d) : device_(d) {}    // NOLINT
  TensorOptions(DeviceType t) : device_(t) {}  // NOLINT

  // Builders: a copy with one option set.
  TensorOptions dtype(DType d) const {
    TensorOptions o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    TensorOptions o = *this;
    o.device_ = d;
    return o;
  }
  TensorOptions requires_grad(bool flag) const {
    TensorOptions o = *this;
    o.requires_grad_ = flag;
    return o;
  }

  // Getters. dtype() is the default float (f32) unless one was set.
  DType dtype() const { return dtype_.value_or(kDefaultFloat); }
  bool has_dtype() const { return dtype_.has_value(); }
  const std::optional<DType>& dtype_opt() const { return dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }

 private:
  std::optional<DType> dtype_;
  Device device_ = Device(DeviceType::CPU);
  bool requires_grad_ = false;
};

// torch::dtype(..), torch::device(..), torch::requires_grad(..): options with one field set.
inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool flag = true) { return TensorOptions().requires_grad(flag); }

}  // namespace aotgrad
