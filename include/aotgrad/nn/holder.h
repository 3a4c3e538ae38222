// Module holders, LibTorch's way of writing modules as values:
//
//   nn::Linear fc(3, 4);            // holds a std::shared_ptr<nn::LinearImpl>
//   Tensor y = fc(x);               // fc->forward(x)
//   fc->weight;                     // the LinearImpl's members through ->
//   nn::Linear same = fc;           // copies share the module, as shared_ptrs do
//   nn::Linear later = nullptr;     // empty until assigned; -> on it throws
//
// A holder default-constructs its module when the module has a default constructor
// (`nn::Dropout2d drop;`), as LibTorch does. TORCH_MODULE(Name) declares the holder `Name` of
// the class `NameImpl`, for library and user modules alike.
// Thread-safety: as std::shared_ptr (the holder); the module as its own header says.
#pragma once

#include <cstddef>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>

namespace aotgrad::nn {
namespace nn_detail {
// The readable name of a C++ type ("aotgrad::nn::LinearImpl", "Net"), for messages.
std::string demangle(const char* mangled_name);
}  // namespace nn_detail

template <typename Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;

  ModuleHolder() requires std::is_default_constructible_v<Impl> : impl_(std::make_shared<Impl>()) {
    impl_->template remember_forward<Impl>();
  }
  ModuleHolder(std::nullptr_t) {}  // NOLINT: implicit, as LibTorch's
  ModuleHolder(std::shared_ptr<Impl> module) : impl_(std::move(module)) {  // NOLINT: implicit
    if (impl_) impl_->template remember_forward<Impl>();
  }

  // Constructs the module from the arguments: nn::Linear(3, 4), nn::Conv2d(Conv2dOptions(...)).
  template <typename Head, typename... Tail>
  requires(!std::is_base_of_v<ModuleHolder, std::remove_cvref_t<Head>> &&
           !std::is_same_v<std::remove_cvref_t<Head>, std::nullptr_t> &&
           !std::is_same_v<std::remove_cvref_t<Head>, std::shared_ptr<Impl>> &&
           std::is_constructible_v<Impl, Head&&, Tail&&...>) explicit ModuleHolder(Head&& head,
                                                                                   Tail&&... tail)
      : impl_(std::make_shared<Impl>(std::forward<Head>(head), std::forward<Tail>(tail)...)) {
    impl_->template remember_forward<Impl>();
  }

  Impl* operator->() { return get(); }
  const Impl* operator->() const { return get(); }
  Impl& operator*() { return *get(); }
  const Impl& operator*() const { return *get(); }
  Impl* get() { return checked(); }
  const Impl* get() const { return checked(); }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  bool is_empty() const noexcept { return impl_ == nullptr; }
  explicit operator bool() const noexcept { return !is_empty(); }

  // Calls the module's forward with the arguments.
  template <typename... Args>
  decltype(auto) operator()(Args&&... args) {
    return get()->forward(std::forward<Args>(args)...);
  }
  // Indexes containers: seq[0], list[2].
  template <typename Arg>
  decltype(auto) operator[](Arg&& arg) {
    return (*get())[std::forward<Arg>(arg)];
  }

 private:
  Impl* checked() const {
    if (!impl_)
      throw std::logic_error(
          "the module holder of " + nn_detail::demangle(typeid(Impl).name()) +
          " is empty (constructed from nullptr); assign a module before using it");
    return impl_.get();
  }

  std::shared_ptr<Impl> impl_;
};

template <typename Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& holder) {
  if (holder.is_empty())
    return os << "<empty holder of " << nn_detail::demangle(typeid(Impl).name()) << ">";
  return os << *holder;
}

}  // namespace aotgrad::nn

// Declares the holder `Name` of the module class `Impl` (LibTorch's TORCH_MODULE_IMPL).
#define TORCH_MODULE_IMPL(Name, Impl)                      \
  class Name : public ::aotgrad::nn::ModuleHolder<Impl> {  \
   public:                                                 \
    using ::aotgrad::nn::ModuleHolder<Impl>::ModuleHolder; \
  }

// Declares the holder `Name` of the module class `NameImpl` (LibTorch's TORCH_MODULE).
#define TORCH_MODULE(Name) TORCH_MODULE_IMPL(Name, Name##Impl)
