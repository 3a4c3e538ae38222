// SmallBuffer (backends/small_buffer.h): the per-call scratch arrays of the cpp runner hold their
// values inline up to N elements and on the heap past it, with the same contents either way.
#include "backends/small_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;
using ag::backends::SmallBuffer;

TEST(SmallBuffer, InlineUpToCapacityFilledWithTheValue) {
  SmallBuffer<int64_t, 4> b(4, 7);
  EXPECT_TRUE(b.is_inline());
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b[i], 7);
  b[2] = -3;
  EXPECT_EQ(b.data()[2], -3);
  EXPECT_EQ(std::accumulate(b.begin(), b.end(), int64_t{0}), 7 + 7 - 3 + 7);
}

TEST(SmallBuffer, PastCapacityOnTheHeapWithTheSameContents) {
  SmallBuffer<int64_t, 4> b(9, 2);
  EXPECT_FALSE(b.is_inline());
  ASSERT_EQ(b.size(), 9u);
  for (size_t i = 0; i < b.size(); ++i) b[i] += static_cast<int64_t>(i);
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.data()[i], 2 + static_cast<int64_t>(i));
}

TEST(SmallBuffer, EmptyAndDefaultValues) {
  SmallBuffer<const char*, 2> none(0);
  EXPECT_EQ(none.size(), 0u);
  EXPECT_EQ(none.begin(), none.end());
  SmallBuffer<int64_t, 3> zeros(3);
  for (int64_t v : zeros) EXPECT_EQ(v, 0);
}

TEST(SmallBuffer, HoldsTensorsAndReleasesThem) {
  ag::Tensor t = ag::ones({1});
  {
    SmallBuffer<ag::Tensor, 2> inline_buf(2, t);
    SmallBuffer<ag::Tensor, 2> heap_buf(5, t);
    EXPECT_EQ(t.impl_ptr().use_count(), 1 + 2 + 5);
    EXPECT_FLOAT_EQ(heap_buf[4].item<float>(), 1.0f);
  }
  EXPECT_EQ(t.impl_ptr().use_count(), 1);
}

namespace {
// Counts the live objects of its type, to see what a SmallBuffer constructs and destroys.
struct Counted {
  static inline int live = 0;
  int value = 0;
  Counted() { ++live; }
  Counted(const Counted& o) : value(o.value) { ++live; }
  Counted& operator=(const Counted&) = default;
  ~Counted() { --live; }
};
}  // namespace

TEST(SmallBuffer, MakesOnlyTheElementsItHolds) {
  Counted proto;
  proto.value = 5;
  ASSERT_EQ(Counted::live, 1);
  {
    SmallBuffer<Counted, 8> b(3, proto);  // capacity 8, three made
    EXPECT_EQ(Counted::live, 1 + 3);
    EXPECT_EQ(b[2].value, 5);
  }
  EXPECT_EQ(Counted::live, 1);
  {
    SmallBuffer<Counted, 2> b(4, proto);  // on the heap: four, none inline
    EXPECT_EQ(Counted::live, 1 + 4);
  }
  EXPECT_EQ(Counted::live, 1);
}
