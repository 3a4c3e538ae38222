#include "kernels/factory.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "aotgrad/random.h"
#include "kernels/copy.h"
#include "kernels/parallel.h"
#include "tensor/dtype_dispatch.h"

namespace aotgrad::kernels {
namespace {

constexpr int64_t kParallelGrain = 32768;

template <typename D>
D scalar_as(const Scalar& value) {
  if constexpr (std::is_same_v<D, bool>)
    return value.to_bool();
  else if (value.is_floating())
    return convert<D>(value.to_double());
  else
    return convert<D>(value.to_int());
}

// Uniform doubles from raw Philox words. The number of mantissa bits is the target type's, so the
// rounding to that type can never produce 1.0 (which would break the [0, 1) contract).
template <typename D>
double unit_from_word(uint32_t w) {
  if constexpr (std::is_same_v<D, Half>)
    return static_cast<double>(w >> 21) * 0x1p-11;
  else if constexpr (std::is_same_v<D, BFloat16>)
    return static_cast<double>(w >> 24) * 0x1p-8;
  else
    return static_cast<double>(w >> 8) * 0x1p-24;
}
double unit_from_words(uint32_t hi, uint32_t lo) {
  uint64_t bits = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(bits) * 0x1p-53;
}

// One Philox block -> up to 4 values (2 for double). `u1` must be in (0, 1] for the logarithm.
void box_muller(double u1, double u2, double* out) {
  double r = std::sqrt(-2.0 * std::log(u1));
  double theta = 2.0 * std::numbers::pi * u2;
  out[0] = r * std::cos(theta);
  out[1] = r * std::sin(theta);
}

template <typename D>
int values_per_block() {
  return std::is_same_v<D, double> ? 2 : 4;
}

template <typename D>
void block_values(bool gaussian, const uint32_t w[4], double* vals) {
  if constexpr (std::is_same_v<D, double>) {
    double a = unit_from_words(w[0], w[1]), b = unit_from_words(w[2], w[3]);
    if (gaussian)
      box_muller(1.0 - a, b, vals);
    else
      vals[0] = a, vals[1] = b;
  } else {
    double u[4];
    for (int i = 0; i < 4; ++i) u[i] = unit_from_word<D>(w[i]);
    if (gaussian) {
      box_muller(1.0 - u[0], u[1], vals);
      box_muller(1.0 - u[2], u[3], vals + 2);
    } else {
      std::copy(u, u + 4, vals);
    }
  }
}

void random_fill(const Tensor& dst, uint64_t seed, uint64_t block_offset, bool gaussian) {
  if (!dst.is_contiguous()) throw std::logic_error("random fill: destination must be contiguous");
  if (!is_floating(dst.dtype()))
    throw std::invalid_argument("random numbers need a floating dtype, got " +
                                std::string(dtype_name(dst.dtype())));
  const int64_t n = dst.numel();
  visit_dtype(dst.dtype(), [&](auto tag) {
    using D = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<D> || std::is_same_v<D, Half> ||
                  std::is_same_v<D, BFloat16>) {
      D* out = reinterpret_cast<D*>(dst.impl()->data_bytes());
      const int64_t per = values_per_block<D>();
      const int64_t blocks = (n + per - 1) / per;
#pragma omp parallel for if (n > kParallelGrain)
      for (int64_t b = 0; b < blocks; ++b) {
        uint32_t w[4];
        philox4x32(seed, block_offset + static_cast<uint64_t>(b), w);
        double vals[4];
        block_values<D>(gaussian, w, vals);
        const int64_t end = std::min(n, (b + 1) * per);
        for (int64_t k = b * per; k < end; ++k) out[k] = convert<D>(vals[k - b * per]);
      }
    }
  });
}

}  // namespace

void fill_value(const Tensor& dst, const Scalar& value) {
  if (!dst.is_contiguous()) {
    fill(dst, value);
    return;
  }
  const int64_t n = dst.numel();
  visit_dtype(dst.dtype(), [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* out = reinterpret_cast<D*>(dst.impl()->data_bytes());
    const D v = scalar_as<D>(value);
    if (n <= kParallelGrain) {  // no team: libgomp allocates one even for a serial region
      std::fill(out, out + n, v);
      return;
    }
#pragma omp parallel for
    for (int64_t k = 0; k < n; ++k) out[k] = v;
  });
}

Tensor full(const IntList& sizes, const Scalar& value, DType dtype) {
  Tensor out = make_tensor(sizes, dtype);
  fill_value(out, value);
  return out;
}

Tensor arange(const Scalar& start, const Scalar& step, int64_t n, DType dtype) {
  Tensor out = make_tensor({n}, dtype);
  visit_dtype(dtype, [&](auto tag) {
    using D = typename decltype(tag)::type;
    D* p = reinterpret_cast<D*>(out.impl()->data_bytes());
    if constexpr (std::is_same_v<D, int64_t>) {
      const int64_t s = start.to_int(), st = step.to_int();
#pragma omp parallel for if (n > kParallelGrain)
      for (int64_t k = 0; k < n; ++k) p[k] = s + st * k;
    } else {
      const double s = start.to_double(), st = step.to_double();
#pragma omp parallel for if (n > kParallelGrain)
      for (int64_t k = 0; k < n; ++k) p[k] = convert<D>(s + st * static_cast<double>(k));
    }
  });
  return out;
}

int64_t random_blocks(DType dtype, int64_t numel) {
  const int64_t per = dtype == DType::f64 ? 2 : 4;
  return (numel + per - 1) / per;
}

void uniform(const Tensor& dst, uint64_t seed, uint64_t block_offset) {
  random_fill(dst, seed, block_offset, /*gaussian=*/false);
}

void normal(const Tensor& dst, uint64_t seed, uint64_t block_offset) {
  random_fill(dst, seed, block_offset, /*gaussian=*/true);
}

}  // namespace aotgrad::kernels
