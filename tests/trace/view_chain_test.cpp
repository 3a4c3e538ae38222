// The geometry helpers of trace/view_chain.h that decide whether an as_strided window can be
// rebased onto an input's own elements: dense_order, window_within, window_within_positions.
#include "trace/view_chain.h"

#include <gtest/gtest.h>

#include "aotgrad/ops.h"
#include "trace/functionalize.h"

namespace ag = aotgrad;
using ag::IntList;
using ag::trace::ViewStep;

namespace {

// An as_strided step with this window; its tensor slot empty, as the tracer keeps it.
ViewStep window(const IntList& size, const IntList& stride, int64_t offset) {
  ViewStep s;
  s.op = &ag::ops::lookup("aten.as_strided.default");
  s.args = {ag::Tensor(), size, stride, offset};
  return s;
}

}  // namespace

TEST(ViewChainGeometry, DenseOrderIsTheStorageOrderOfADenseTensorOnly) {
  EXPECT_EQ(ag::trace::dense_order({2, 3}, {3, 1}), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(ag::trace::dense_order({2, 3}, {1, 2}), (std::vector<int64_t>{1, 0}));
  EXPECT_FALSE(ag::trace::dense_order({4, 3}, {6, 1}));  // a column slice: gaps
  EXPECT_FALSE(ag::trace::dense_order({3, 2}, {0, 1}));  // an expand: overlaps
}

TEST(ViewChainGeometry, WindowWithinAConsecutiveRange) {
  EXPECT_TRUE(ag::trace::window_within(window({2, 2}, {2, 1}, 3), 3, 4));   // 3..6
  EXPECT_FALSE(ag::trace::window_within(window({2, 2}, {2, 1}, 3), 3, 3));  // reaches 6
  EXPECT_FALSE(ag::trace::window_within(window({2}, {1}, 2), 3, 4));        // starts before
}

TEST(ViewChainGeometry, WindowWithinPositionsReachesOnlyTheTensorsElements) {
  // A column slice [4, 3] of a [4, 6] tensor at offset 1: positions 1-3, 7-9, 13-15, 19-21.
  const IntList sizes{4, 3}, strides{6, 1};
  EXPECT_TRUE(ag::trace::window_within_positions(window({2, 2}, {6, 1}, 8), 1, sizes, strides));
  EXPECT_TRUE(ag::trace::window_within_positions(window({2, 2}, {1, 6}, 7), 1, sizes, strides));
  EXPECT_TRUE(ag::trace::window_within_positions(window({}, {}, 21), 1, sizes, strides));
  EXPECT_TRUE(ag::trace::window_within_positions(window({0, 5}, {1, 1}, 4), 1, sizes, strides));
  // Position 10 lies in a gap, 0 before the first element, 22 past the last.
  EXPECT_FALSE(ag::trace::window_within_positions(window({3}, {1}, 8), 1, sizes, strides));
  EXPECT_FALSE(ag::trace::window_within_positions(window({2}, {1}, 0), 1, sizes, strides));
  EXPECT_FALSE(ag::trace::window_within_positions(window({2}, {1}, 21), 1, sizes, strides));
  // A window whose offset is not known yet (None) is never within.
  ViewStep none = window({1}, {1}, 0);
  none.args[3] = ag::ops::Arg();
  EXPECT_FALSE(ag::trace::window_within_positions(none, 1, sizes, strides));
  // Past the bound on positions it answers "not within" rather than enumerate.
  EXPECT_FALSE(
      ag::trace::window_within_positions(window({1}, {1}, 0), 0, {2, 2}, {int64_t{1} << 23, 1}));
}
