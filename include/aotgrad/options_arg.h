// AOTGRAD_ARG(T, name): a LibTorch-style option or state field, as the nn options and the
// optimizers' options and state declare them. `x.name(v)` sets it and returns `x` (for chaining),
// `x.name()` reads it. Follow with `= default_value;`.
#pragma once

#define AOTGRAD_ARG(T, name)        \
 public:                            \
  auto& name(const T& new_##name) { \
    this->name##_ = new_##name;     \
    return *this;                   \
  }                                 \
  const T& name() const noexcept {  \
    return name##_;                 \
  }                                 \
  T& name() noexcept {              \
    return name##_;                 \
  }                                 \
                                    \
 private:                           \
  T name##_
