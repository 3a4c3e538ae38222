// The strided copy (kernels/copy.cpp) and its 2-D slab kernels (kernels/vec/copy.h): every
// layout it plans (contiguous rows, broadcast, transpose, arbitrary strides), every element size,
// every ISA target this CPU runs, overlapping operands, dtype conversion and accumulation.
#include "kernels/copy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "kernels/vec/copy.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using kernels::vec::Copy2d;

// Distinct bytes for every element: a wrong offset shows up as a wrong value.
template <typename T>
std::vector<T> numbered(size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(i * 2654435761u + 1);
  return v;
}

enum class Kind { rows, broadcast, transpose };

// dst (rows x cols, stride ds) from src (stride ss) as each kernel of vec/copy.h defines it.
template <typename T>
std::vector<T> reference(Kind kind, const std::vector<T>& src, std::vector<T> dst, int64_t ds,
                         int64_t ss, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[static_cast<size_t>(r * ds + c)] =
          src[static_cast<size_t>(kind == Kind::rows        ? r * ss + c
                                  : kind == Kind::broadcast ? r * ss
                                                            : c * ss + r)];
  return dst;
}

template <typename T>
void check_kernel(Kind kind, int log2_size) {
  // Shapes around the vector widths (4 .. 64 lanes) and the 128 x 64 transpose tile, with edges
  // that take the half- and quarter-width register blocks, and strides wider than the slab so
  // that a write past a row's end is caught.
  const int64_t shapes[][2] = {{1, 1},    {3, 5},   {16, 16}, {17, 33},   {64, 64},
                               {129, 65}, {200, 7}, {7, 200}, {130, 131}, {24, 40},
                               {136, 72}, {12, 12}, {60, 44}};
  for (const auto* target : kernels::vec::copy_targets()) {
    for (const auto& shape : shapes) {
      const int64_t rows = shape[0], cols = shape[1];
      const int64_t ds = cols + 3;
      const int64_t ss = (kind == Kind::transpose ? rows : cols) + 5;
      const int64_t src_lines = kind == Kind::transpose ? cols : rows;
      const std::vector<T> src = numbered<T>(static_cast<size_t>(src_lines * ss));
      std::vector<T> dst(static_cast<size_t>(rows * ds), T{0});
      const std::vector<T> want = reference(kind, src, dst, ds, ss, rows, cols);
      const Copy2d fn = kind == Kind::rows        ? target->rows[log2_size]
                        : kind == Kind::broadcast ? target->broadcast[log2_size]
                                                  : target->transpose[log2_size];
      fn(reinterpret_cast<char*>(dst.data()), ds, reinterpret_cast<const char*>(src.data()), ss,
         rows, cols);
      EXPECT_EQ(dst, want) << target->name << " kind " << static_cast<int>(kind) << " size "
                           << sizeof(T) << " shape " << rows << "x" << cols;
    }
  }
}

TEST(CopyKernels, EveryTargetEveryElementSizeMatchesTheDefinition) {
  ASSERT_FALSE(kernels::vec::copy_targets().empty());
  for (Kind kind : {Kind::rows, Kind::broadcast, Kind::transpose}) {
    check_kernel<uint8_t>(kind, 0);
    check_kernel<uint16_t>(kind, 1);
    check_kernel<uint32_t>(kind, 2);
    check_kernel<uint64_t>(kind, 3);
  }
}

// The streaming transpose (non-temporal stores where the destination rows are whole aligned
// lines, else plain stores) on a 64-byte aligned destination: rows that stream, an edge that
// does not, and a row stride that forbids streaming.
TEST(CopyKernels, StreamingTransposeMatchesTheDefinition) {
  for (const auto* target : kernels::vec::copy_targets()) {
    for (int64_t ds : {int64_t{96}, int64_t{83}}) {
      for (int log2_size : {2, 3}) {
        const int64_t rows = 50, cols = 70, ss = rows + 2;
        const int64_t esize = int64_t{1} << log2_size;
        Tensor dst_buf = zeros({rows * ds * esize}, DType::u8);  // 64-byte aligned storage
        std::vector<uint8_t> src(static_cast<size_t>(cols * ss * esize));
        for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 131 + 7);
        target->transpose_stream[log2_size](reinterpret_cast<char*>(dst_buf.data_ptr<uint8_t>()),
                                            ds, reinterpret_cast<const char*>(src.data()), ss, rows,
                                            cols);
        const uint8_t* dst = dst_buf.data_ptr<uint8_t>();
        int wrong = 0;
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c)
            wrong += std::memcmp(dst + (r * ds + c) * esize, src.data() + (c * ss + r) * esize,
                                 static_cast<size_t>(esize)) != 0;
        EXPECT_EQ(wrong, 0) << target->name << " ds " << ds << " size " << esize;
      }
    }
  }
}

// The values of `src` in row-major order, read through its strides from an iota base: base[k] = k,
// so the expected value at each logical index is the storage offset it addresses.
std::vector<double> expected_offsets(const Tensor& src) {
  std::vector<double> out;
  std::vector<int64_t> idx(static_cast<size_t>(src.dim()), 0);
  for (int64_t n = 0; n < src.numel(); ++n) {
    int64_t off = src.storage_offset();
    for (int64_t d = 0; d < src.dim(); ++d) off += idx[static_cast<size_t>(d)] * src.stride(d);
    out.push_back(static_cast<double>(off));
    for (int64_t d = src.dim() - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < src.size(d)) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

Tensor iota_base(int64_t n, DType dtype) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<double>(i);
  return from_vector(v, {n}).to(dtype);
}

TEST(StridedCopy, PermutesSlicesAndTransposesEveryDtype) {
  for (DType dtype : {DType::f32, DType::f64, DType::i64, DType::f16, DType::bf16}) {
    // Sizes large enough to take the parallel, blocked path (> 32768 elements) and small ones.
    const Tensor big = iota_base(300 * 257, dtype).view({300, 257});
    const Tensor cube = iota_base(6 * 35 * 9 * 4, dtype).view({6, 35, 9, 4});
    const Tensor views[] = {
        big.t(),
        slice(big, 1, 3, 250, 2).t(),
        slice(big, 0, 1, 299),
        permute(cube, {0, 2, 1, 3}),
        permute(cube, {3, 1, 2, 0}),
        permute(cube, {2, 3, 0, 1}),
        slice(permute(cube, {1, 0, 3, 2}), 2, 0, 4, 3),
    };
    for (const Tensor& v : views) {
      Tensor dst = empty(v.sizes(), DType::f64);
      dst.copy_(v);  // converting: the typed walk
      // f16 / bf16 hold integers up to 256 exactly; compare in f64 after the same rounding.
      const std::vector<double> want =
          from_vector(expected_offsets(v), v.sizes()).to(dtype).to(DType::f64).to_vector<double>();
      EXPECT_EQ(dst.to_vector<double>(), want) << dtype_name(dtype);
      Tensor same = empty(v.sizes(), dtype);
      same.copy_(v);  // same dtype: the slab kernels
      EXPECT_EQ(same.to(DType::f64).to_vector<double>(), want) << dtype_name(dtype);
      // Into a transposed destination too.
      if (v.dim() == 2) {
        Tensor dt = empty({v.size(1), v.size(0)}, dtype).t();
        dt.copy_(v);
        EXPECT_EQ(dt.to(DType::f64).to_vector<double>(), want) << dtype_name(dtype);
      }
    }
  }
}

TEST(StridedCopy, BroadcastsAndCopiesBools) {
  Tensor row = from_vector(std::vector<float>{1, 2, 3}, {3});
  Tensor dst = empty({4, 3});
  dst.copy_(row);
  EXPECT_EQ(testing::values(dst), (std::vector<float>{1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3}));
  Tensor col = from_vector(std::vector<float>{5, 6}, {2, 1});
  Tensor wide = empty({2, 40000});
  wide.copy_(col);
  EXPECT_EQ(testing::values(wide)[39999], 5.0f);
  EXPECT_EQ(testing::values(wide)[40000], 6.0f);
  Tensor b = from_vector(std::vector<double>{0, 1, 2, 0, 0, 3}, {2, 3}).to(DType::b8);
  Tensor bt = empty({3, 2}, DType::b8);
  bt.copy_(b.t());
  EXPECT_EQ(bt.to(DType::f64).to_vector<double>(), (std::vector<double>{0, 0, 1, 0, 1, 1}));
}

// A contiguous copy, a fill and a strided 1-D copy long enough to be cut into rows for threads.
TEST(StridedCopy, LongRunsCutIntoRows) {
  const int64_t n = 3 * 4096 * 4;
  const Tensor src = iota_base(n, DType::f32);
  Tensor dst = empty({n});
  dst.copy_(src);
  EXPECT_EQ(dst.to_vector<float>(), src.to_vector<float>());
  Tensor filled = empty({512, 512});
  kernels::fill(filled, 2.5);
  for (float v : testing::values(filled)) ASSERT_EQ(v, 2.5f);
  Tensor wide = zeros({2 * n});
  Tensor every_other = slice(wide, 0, 0, 2 * n, 2);
  every_other.copy_(src);
  const std::vector<float> w = wide.to_vector<float>();
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(w[static_cast<size_t>(2 * i)], static_cast<float>(i));
    ASSERT_EQ(w[static_cast<size_t>(2 * i + 1)], 0.0f);
  }
}

// The kernel itself (not only the op layer above it) reads an overlapping source whole first.
TEST(StridedCopy, OverlappingSourceIsReadBeforeItIsWritten) {
  // x[1:] = x[:-1] shifts right: every element gets its left neighbour's old value.
  Tensor x = from_vector(std::vector<float>{0, 1, 2, 3, 4}, {5});
  kernels::copy_into(slice(x, 0, 1, 5), slice(x, 0, 0, 4));
  EXPECT_EQ(testing::values(x), (std::vector<float>{0, 0, 1, 2, 3}));
  // A square matrix transposed into itself.
  Tensor m = testing::iota({3, 3});
  kernels::copy_into(m, m.t());
  EXPECT_EQ(testing::values(m), (std::vector<float>{0, 3, 6, 1, 4, 7, 2, 5, 8}));
  // Accumulating a matrix's transpose into itself.
  Tensor a = testing::iota({2, 2});
  kernels::add_into(a, a.t());
  EXPECT_EQ(testing::values(a), (std::vector<float>{0, 3, 3, 6}));
}

TEST(StridedCopy, AccumulatesTransposedBroadcastAndConvertedSources) {
  Tensor acc = testing::iota({2, 3});
  kernels::add_into(acc, testing::iota({3, 2}, 10).t());
  EXPECT_EQ(testing::values(acc), (std::vector<float>{10, 13, 16, 14, 17, 20}));
  kernels::add_into(acc, from_vector(std::vector<double>{0.5, 1.5, 2.5}, {3}));
  EXPECT_EQ(testing::values(acc), (std::vector<float>{10.5, 14.5, 18.5, 14.5, 18.5, 22.5}));
  // Large transposed accumulation: the parallel path.
  Tensor g = zeros({513, 129});
  Tensor src = testing::iota({129, 513});
  kernels::add_into(g, src.t());
  kernels::add_into(g, src.t());
  const std::vector<float> got = testing::values(g);
  EXPECT_EQ(got[1 * 129 + 2], 2.0f * (2 * 513 + 1));
  EXPECT_EQ(got[512 * 129 + 128], 2.0f * (128 * 513 + 512));
}

// copy_ of a transpose whose destination is larger than the core's L2 takes the streaming kernel.
TEST(StridedCopy, TransposeLargerThanL2) {
  int64_t n = 16;
  while (n * n * 4 < kernels::vec::stream_transpose_bytes()) n += 16;
  const Tensor src = iota_base(n * n, DType::f32).view({n, n});
  Tensor dst = empty({n, n});
  dst.copy_(src.t());
  const std::vector<float> got = dst.to_vector<float>();
  int wrong = 0;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < n; ++c)
      wrong += got[static_cast<size_t>(r * n + c)] != static_cast<float>(c * n + r);
  EXPECT_EQ(wrong, 0) << n;
}

}  // namespace
}  // namespace aotgrad
