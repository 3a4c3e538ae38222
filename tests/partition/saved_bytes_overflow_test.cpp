// Byte counts in the partitioner never wrap (issue 10, item 4): an expanded view counts its own
// elements, which can be more bytes than int64 holds. On main the count of an f32 [2^31, 2^31]
// view wrapped to 0 and the saved-value report said "0 B"; now counts and their sums saturate,
// and the report says so.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "partition/cost_model.h"
#include "partition/default_partition.h"
#include "partition/partition.h"
#include "partition/partition_testing.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::contains;

constexpr size_t kSaturated = std::numeric_limits<size_t>::max();

ops::TensorMeta expanded_f32(const IntList& sizes) {
  return ops::TensorMeta{DType::f32, sizes, IntList(sizes.size(), 0), 0};
}

partition::SavedValue saved(const std::string& name, const ops::TensorMeta& meta,
                            int primal_index) {
  partition::SavedValue s;
  s.name = name;
  s.producer = primal_index >= 0 ? "input" : "aten.expand.default";
  s.meta = meta;
  s.bytes = partition::value_bytes(meta);
  s.reason = "test";
  s.primal_index = primal_index;
  return s;
}

TEST(SavedBytesOverflow, ValueBytesOfAHugeExpandedViewSaturates) {
  const int64_t big = int64_t{1} << 31;
  EXPECT_EQ(partition::value_bytes(expanded_f32({big, big})), kSaturated);
  // Just below: 2^62 f32 elements would be 2^64 bytes; 2^61 are 2^63, which size_t holds.
  EXPECT_EQ(partition::value_bytes(expanded_f32({big, big / 2})), size_t{1} << 63);
  EXPECT_EQ(partition::bytes_to_string(1024), "1024 B");
  EXPECT_EQ(partition::bytes_to_string(kSaturated), "more than 18446744073709551614 B (saturated)");
}

TEST(SavedBytesOverflow, ReportAndTotalsSaturateInsteadOfWrapping) {
  const int64_t big = int64_t{1} << 31;
  partition::Partition p;
  p.saved.push_back(saved("expand", expanded_f32({big, big}), -1));
  p.saved.push_back(saved("x", ops::TensorMeta::contiguous({4}, DType::f32), 0));
  EXPECT_EQ(p.saved_bytes(), kSaturated);
  std::string report = p.report();
  EXPECT_TRUE(contains(report,
                       "%expand: f32[2147483648, 2147483648]  more than "
                       "18446744073709551614 B (saturated)  from aten.expand.default"))
      << report;
  EXPECT_TRUE(contains(report,
                       "saved 2 values, more than 18446744073709551614 B (saturated) "
                       "(more than 18446744073709551614 B (saturated) activations, 16 B "
                       "graph inputs)"))
      << report;
  EXPECT_FALSE(contains(report, " 0 B")) << report;
}

// loss = (x [1, 1] expanded to [2^31, 2^31]) @ w [2^31, 1], summed; only w requires grad, so
// the backward needs the expanded view (w's gradient is its transpose times the output's) and no
// huge result is materialized: the trace runs on fake tensors. On main the view counted 2^64 mod
// 2^64 = 0 bytes and the default partitioner reported saving it as "0 B".
TEST(SavedBytesOverflow, AHugeViewTheBackwardReadsIsNeverCountedAsFree) {
  constexpr int64_t big = int64_t{1} << 31;
  Tensor w = make_tensor({big, 1}, DType::f32, /*fake=*/true);
  w.requires_grad_();
  testing::TracedJoint t = testing::trace_joint(
      [](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{mm(in[0].expand({big, big}), in[1]).sum()};
      },
      {ones({1, 1}), w});
  // The default partitioner saves what the backward reads, the view included: its size is
  // reported as saturated, not as 0 B.
  partition::Partition p = partition::default_partition(t.joint.graph, t.info());
  EXPECT_TRUE(contains(p.report(),
                       "%expand: f32[2147483648, 2147483648]  more than "
                       "18446744073709551614 B (saturated)"))
      << p.report();
  EXPECT_EQ(p.saved_bytes(), kSaturated);
  // The min-cut partitioners recompute it from x, whose 4 bytes are cheaper.
  for (double budget : {1.0, 0.0}) {
    partition::Partition cut = testing::min_cut(t, budget);
    for (const partition::SavedValue& s : cut.saved)
      EXPECT_NE(s.meta.sizes, (IntList{big, big})) << cut.report();
    EXPECT_LT(cut.saved_bytes(), size_t{1} << 40) << cut.report();
  }
}

}  // namespace
}  // namespace aotgrad
