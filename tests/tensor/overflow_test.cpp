// Sizes that overflow int64, at the tensor layer: the checked arithmetic (tensor/checked_math.h)
// against a 128-bit reference on generated sizes and strides, make_tensor / make_view refusing
// shapes whose element count, byte size or reach wraps, out-of-memory errors that name the op and
// the bytes, and AOTGRAD_ALLOCATOR values the allocator does not know.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <string>

#include "aotgrad/memory.h"
#include "aotgrad/ops.h"
#include "aotgrad/tensor.h"
#include "tensor/allocator.h"
#include "tensor/checked_math.h"
#include "tensor/current_op.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::contains;
using testing::error_of;
using Wide = __int128;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

bool fits(Wide v) {
  return v >= std::numeric_limits<int64_t>::min() && v <= kMax;
}

// ---- checked arithmetic against __int128 ----

// The reference: every partial product in 128 bits; nullopt once one leaves int64 (a zero size
// anywhere makes the count 0). Sizes are below 2^62, so a partial product of a running value
// within int64 and one size fits 128 bits.
std::optional<int64_t> reference_numel(const IntList& sizes) {
  for (int64_t s : sizes)
    if (s == 0) return 0;
  Wide n = 1;
  for (int64_t s : sizes) {
    n *= s;
    if (!fits(n)) return std::nullopt;
  }
  return static_cast<int64_t>(n);
}

// The largest offset reached, in 128 bits (each span fits: |size| < 2^62, |stride| < 2^62).
std::optional<ReachableOffsets> reference_reach(const IntList& sizes, const IntList& strides,
                                                int64_t offset) {
  for (int64_t s : sizes)
    if (s == 0) return ReachableOffsets{offset, offset, true};
  Wide lo = offset, hi = offset;
  for (size_t d = 0; d < sizes.size(); ++d) {
    Wide span = Wide{sizes[d] - 1} * strides[d];
    if (!fits(span)) return std::nullopt;
    (span >= 0 ? hi : lo) += span;
    if (!fits(hi) || !fits(lo)) return std::nullopt;
  }
  return ReachableOffsets{static_cast<int64_t>(lo), static_cast<int64_t>(hi), false};
}

// A size or stride drawn to land near the interesting edges: small, powers of two up to 2^61
// and their neighbours, the odd zero.
int64_t edge_value(std::mt19937_64& rng, bool allow_negative) {
  int64_t v;
  switch (rng() % 4) {
    case 0:
      v = static_cast<int64_t>(rng() % 5);
      break;
    case 1:
      v = int64_t{1} << (rng() % 62);
      break;
    case 2:
      v = (int64_t{1} << (rng() % 62)) + static_cast<int64_t>(rng() % 3) - 1;
      break;
    default:
      v = static_cast<int64_t>(rng() % (uint64_t{1} << (rng() % 62)));
      break;
  }
  if (allow_negative && rng() % 4 == 0) v = -v;
  return v;
}

TEST(CheckedMath, NumelMatchesInt128ReferenceOnGeneratedShapes) {
  std::mt19937_64 rng(20240610);
  int overflowing = 0, fitting = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    IntList sizes(rng() % 6);
    for (int64_t& s : sizes) s = edge_value(rng, false);
    std::optional<int64_t> expected = reference_numel(sizes);
    ASSERT_EQ(checked_numel(sizes), expected) << shape_to_string(sizes);
    if (expected) {
      ++fitting;
      EXPECT_EQ(numel_of(sizes), *expected);
    } else {
      ++overflowing;
      EXPECT_THROW(numel_of(sizes), std::invalid_argument) << shape_to_string(sizes);
    }
  }
  // Both sides of the edge were exercised.
  EXPECT_GT(overflowing, 1000);
  EXPECT_GT(fitting, 1000);
}

TEST(CheckedMath, ReachableOffsetsMatchInt128ReferenceOnGeneratedGeometry) {
  std::mt19937_64 rng(7);
  int overflowing = 0, fitting = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    size_t ndim = rng() % 5;
    IntList sizes(ndim), strides(ndim);
    for (size_t d = 0; d < ndim; ++d) {
      sizes[d] = edge_value(rng, false);
      strides[d] = edge_value(rng, true);
    }
    int64_t offset = edge_value(rng, false);
    std::optional<ReachableOffsets> expected = reference_reach(sizes, strides, offset);
    std::optional<ReachableOffsets> got = checked_reachable_offsets(sizes, strides, offset);
    ASSERT_EQ(got.has_value(), expected.has_value())
        << shape_to_string(sizes) << " " << shape_to_string(strides) << " +" << offset;
    if (!got) {
      ++overflowing;
      continue;
    }
    ++fitting;
    EXPECT_EQ(got->empty, expected->empty);
    if (!got->empty) {
      EXPECT_EQ(got->lo, expected->lo);
      EXPECT_EQ(got->hi, expected->hi);
    }
    // check_view_geometry accepts exactly the views whose count and reach fit, in bytes too (an
    // empty view's reach is its offset, which data_bytes() still scales by the itemsize).
    const int64_t item = 4;
    bool accepted = reference_numel(sizes).has_value() && fits(Wide{expected->lo} * item) &&
                    fits((Wide{expected->hi} + 1) * item);
    std::string err = error_of<std::invalid_argument>(
        [&] { check_view_geometry(sizes, strides, offset, DType::f32); });
    EXPECT_EQ(err.empty(), accepted) << err;
  }
  EXPECT_GT(overflowing, 1000);
  EXPECT_GT(fitting, 1000);
}

TEST(CheckedMath, ContiguousStridesAndShapeCheckAgreeWithReference) {
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 20000; ++iter) {
    IntList sizes(rng() % 5);
    for (int64_t& s : sizes) s = edge_value(rng, false);
    // Strides count size 0 as 1, so they may overflow where the element count (0) does not.
    IntList as_one = sizes;
    for (int64_t& s : as_one) s = std::max<int64_t>(s, 1);
    bool strides_fit =
        as_one.empty() || reference_numel(IntList(as_one.begin() + 1, as_one.end())).has_value();
    std::optional<int64_t> n = reference_numel(sizes);
    bool bytes_fit = n && fits(Wide{*n} * 8);
    std::string err = error_of<std::invalid_argument>([&] { check_shape(sizes, DType::f64); });
    EXPECT_EQ(err.empty(), strides_fit && bytes_fit) << shape_to_string(sizes) << ": " << err;
    if (strides_fit) {
      IntList strides = contiguous_strides(sizes);
      Wide acc = 1;
      for (size_t d = sizes.size(); d-- > 0;) {
        EXPECT_EQ(Wide{strides[d]}, acc);
        acc *= as_one[d];
      }
    }
  }
}

TEST(CheckedMath, SaturatingHelpers) {
  const size_t max = std::numeric_limits<size_t>::max();
  EXPECT_EQ(saturating_add(max - 1, 1), max);
  EXPECT_EQ(saturating_add(max, 5), max);
  EXPECT_EQ(saturating_mul(size_t{1} << 40, size_t{1} << 30), max);
  EXPECT_EQ(saturating_mul(int64_t{1} << 40, int64_t{1} << 30), kMax);
  EXPECT_EQ(saturating_mul(-(int64_t{1} << 40), int64_t{1} << 30),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(saturating_product({int64_t{1} << 40, int64_t{1} << 30, 0}), 0);
  EXPECT_EQ(saturating_product({int64_t{1} << 40, int64_t{1} << 30, 2}), kMax);
}

// ---- make_tensor / make_view ----

TEST(SizeOverflow, MakeTensorRefusesWrappedByteSizeNamingTheShape) {
  // On main the byte size 2^62 x 4 wrapped to 0 and kernels wrote through a 0-byte buffer.
  std::string err = error_of<std::invalid_argument>([] {
    make_tensor({int64_t{1} << 31, int64_t{1} << 31}, DType::f32);
  });
  EXPECT_EQ(err,
            "make_tensor: shape [2147483648, 2147483648] has 4611686018427387904 elements of 4 "
            "bytes: the byte size overflows int64; use a smaller shape");
  // The element count itself overflowing; a fake tensor is refused the same way.
  err = error_of<std::invalid_argument>([] {
    make_tensor({int64_t{1} << 32, int64_t{1} << 32}, DType::b8, /*fake=*/true);
  });
  EXPECT_EQ(err,
            "make_tensor: shape [4294967296, 4294967296] has more than 9223372036854775807 "
            "elements: the element count overflows int64; use a smaller shape");
  err = error_of<std::invalid_argument>([] { make_tensor({3, -2}, DType::f32); });
  EXPECT_EQ(err,
            "make_tensor: shape [3, -2] has the negative size -2 at dim 1; sizes must be >= 0");
}

TEST(SizeOverflow, LargestFakeShapesThatFitAreAccepted) {
  // f32: 4 x (2^61 - 1) bytes is the largest byte size below 2^63.
  Tensor t = make_tensor({(int64_t{1} << 61) - 1}, DType::f32, /*fake=*/true);
  EXPECT_EQ(t.numel(), (int64_t{1} << 61) - 1);
  EXPECT_EQ(t.storage()->nbytes(), static_cast<size_t>((int64_t{1} << 61) - 1) * 4);
  EXPECT_THROW(make_tensor({int64_t{1} << 61}, DType::f32, true), std::invalid_argument);
  // b8: one byte per element, so the element count's limit is the byte limit.
  EXPECT_EQ(make_tensor({kMax}, DType::b8, true).numel(), kMax);
  // An empty tensor with huge other dims is fine while its strides fit...
  EXPECT_EQ(make_tensor({0, int64_t{1} << 40, int64_t{1} << 20}, DType::f32, true).numel(), 0);
  // ...and refused when they do not (PyTorch: "Stride calculation overflowed").
  EXPECT_THROW(
      make_tensor({0, int64_t{1} << 32, int64_t{1} << 32, int64_t{1} << 32}, DType::f32, true),
      std::invalid_argument);
}

TEST(SizeOverflow, MakeViewRefusesGeometryReachingPastInt64) {
  Tensor base = testing::iota({4});
  // Reach: 1 x 2^62 + 1 x 2^62 = 2^63 elements.
  std::string err = error_of<std::invalid_argument>([&] {
    make_view(base, {2, 2}, {int64_t{1} << 62, int64_t{1} << 62}, 0);
  });
  EXPECT_EQ(err,
            "make_view: a view of shape [2, 2], strides [4611686018427387904, "
            "4611686018427387904] and storage offset 0 reaches element offsets beyond int64; use "
            "smaller sizes or strides");
  // The element offset fits but not in bytes (f32: x 4).
  err = error_of<std::invalid_argument>([&] { make_view(base, {2}, {int64_t{1} << 61}, 0); });
  EXPECT_TRUE(contains(err,
                       "reaches element offset 2305843009213693952, whose end in bytes "
                       "((offset + 1) x 4) overflows int64"))
      << err;
  // An expanded view spans 2^62 elements over one: accepted, and its numel is exact.
  Tensor wide = make_view(base, {int64_t{1} << 31, int64_t{1} << 31}, {0, 0}, 1);
  EXPECT_EQ(wide.numel(), int64_t{1} << 62);
  // Its count overflowing is refused.
  EXPECT_THROW(make_view(base, {int64_t{1} << 32, int64_t{1} << 32}, {0, 0}, 0),
               std::invalid_argument);
}

TEST(SizeOverflow, ErrorsNameTheCurrentOp) {
  CurrentOpScope outer("aten.outer.default");
  {
    CurrentOpScope inner("aten.inner.default");
    EXPECT_EQ(current_op(), "aten.inner.default");
    std::string err = error_of<std::invalid_argument>([] { numel_of({-1}); });
    EXPECT_EQ(err,
              "aten.inner.default: shape [-1] has the negative size -1 at dim 0; sizes must "
              "be >= 0");
  }
  EXPECT_EQ(current_op(), "aten.outer.default");
}

// ---- out of memory ----

// Whether a failed malloc returns null here. Under a sanitizer, an absurd request aborts the
// process unless allocator_may_return_null=1 (the asan test preset sets it).
bool malloc_failure_returns_null() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  for (const char* var : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* v = std::getenv(var);
    if (v && contains(v, "allocator_may_return_null=1")) return true;
  }
  return false;
#else
  return true;
#endif
}

TEST(OutOfMemory, RequestAboveTheLimitNamesOpBytesAndShape) {
  // 2^57 bytes: refused by the allocator before the C library is asked (no memory touched).
  MemoryStats before = memory_stats();
  std::string err = error_of<OutOfMemoryError>([] { empty({int64_t{1} << 55}, DType::f32); });
  EXPECT_EQ(err,
            "out of memory: aten.empty.memory_format asked for 144115188075855872 bytes (128.0 "
            "PiB) for the f32[36028797018963968] result; free memory or use smaller shapes");
  MemoryStats after = memory_stats();
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_EQ(after.num_allocs, before.num_allocs);
}

TEST(OutOfMemory, SystemRefusalNamesOpBytesAndShape) {
  if (!malloc_failure_returns_null()) GTEST_SKIP() << "the sanitizer would abort on 1 PiB";
  // 2^50 bytes (1 PiB): malloc refuses at once. The inputs are expanded views of one element.
  Tensor a = ones({1, 1}).expand({int64_t{1} << 24, 1});
  Tensor b = ones({1, 1}).expand({1, int64_t{1} << 24});
  std::string err;
  try {
    mm(a, b);
  } catch (const OutOfMemoryError& e) {
    err = e.what();
    EXPECT_EQ(e.bytes(), size_t{1} << 50);
  }
  EXPECT_EQ(err,
            "out of memory: aten.mm.default asked for 1125899906842624 bytes (1.0 PiB) for the "
            "f32[16777216, 16777216] result; free memory or use smaller shapes");
  // The allocator still works, and its statistics balance.
  MemoryStats before = memory_stats();
  { Tensor t = ones({1000}); }
  EXPECT_EQ(memory_stats().bytes_in_use, before.bytes_in_use);
}

TEST(OutOfMemory, CopyingOutAHugeExpandedViewNamesTheTensor) {
  // On main to_vector made a std::vector of 2^62 floats: std::length_error escaped, naming
  // nothing, and printing the tensor did the same.
  Tensor wide = ones({1}).expand({int64_t{1} << 31, int64_t{1} << 31});
  std::string err = error_of<OutOfMemoryError>([&] { wide.to_vector<float>(); });
  EXPECT_TRUE(contains(err,
                       "out of memory: to_vector asked for 18446744073709551615 bytes (16.0 "
                       "EiB) to copy the values of a f32[2147483648, 2147483648] tensor"))
      << err;
  // Printing reads only the 64 values it shows.
  std::string printed = wide.to_string();
  EXPECT_TRUE(contains(printed, "[[1, 1, 1,")) << printed;
  EXPECT_TRUE(contains(printed, ", ..., shape=[2147483648, 2147483648], dtype=f32)")) << printed;
}

TEST(OutOfMemory, DescribeBytes) {
  EXPECT_EQ(describe_bytes(12), "12 bytes");
  EXPECT_EQ(describe_bytes(1536), "1536 bytes (1.5 KiB)");
  EXPECT_EQ(describe_bytes(size_t{64} << 30), "68719476736 bytes (64.0 GiB)");
  EXPECT_EQ(describe_bytes(std::numeric_limits<size_t>::max()),
            "18446744073709551615 bytes (16.0 EiB)");
}

// ---- AOTGRAD_ALLOCATOR ----

TEST(AllocatorSetting, KnownValues) {
  EXPECT_TRUE(parse_allocator_setting(nullptr).caching);
  EXPECT_TRUE(parse_allocator_setting("").caching);
  EXPECT_TRUE(parse_allocator_setting("caching").caching);
  EXPECT_FALSE(parse_allocator_setting("system").caching);
  EXPECT_EQ(parse_allocator_setting("system").warning, "");
}

TEST(AllocatorSetting, UnknownValueWarnsAndKeepsTheDefault) {
  AllocatorSetting s = parse_allocator_setting("bogus");
  EXPECT_TRUE(s.caching);
  EXPECT_EQ(s.warning,
            "aotgrad: warning: AOTGRAD_ALLOCATOR=\"bogus\" is not known (accepted: caching, "
            "system); using the default, caching");
  // Raw bytes are escaped; a long value is cut so the line stays short.
  s = parse_allocator_setting("sys\ntem\x01\xff\"");
  EXPECT_TRUE(contains(s.warning, "AOTGRAD_ALLOCATOR=\"sys\\x0atem\\x01\\xff\\x22\"")) << s.warning;
  s = parse_allocator_setting(std::string(1000, 'x').c_str());
  EXPECT_LT(s.warning.size(), 200u);
}

// On main the first allocator use threw from static initialisation, and a fake tensor's Storage
// destructor was that first use: std::terminate. A fresh process (the threadsafe death-test style
// re-runs the binary, so the allocator is made there) must warn once and carry on.
TEST(AllocatorSettingDeathTest, UnknownValueInTheEnvironmentDoesNotAbort) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  setenv("AOTGRAD_ALLOCATOR", "bogus", 1);
  EXPECT_EXIT(
      {
        { make_tensor({2}, DType::f32, /*fake=*/true); }  // first use: a destructor
        Tensor t = ones({3});
        std::fprintf(stderr, "sum=%g caching=%d\n", t.sum().item<double>(),
                     static_cast<int>(caching_allocator_enabled()));
        std::exit(0);
      },
      ::testing::ExitedWithCode(0),
      "AOTGRAD_ALLOCATOR=\"bogus\" is not known \\(accepted: caching, system\\); using the "
      "default, caching.*sum=3 caching=1");
  unsetenv("AOTGRAD_ALLOCATOR");
}

}  // namespace
}  // namespace aotgrad
