// torch::data's surface: samplers, transforms, datasets and the data loader with and without
// worker threads.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "aotgrad/data.h"
#include "aotgrad/ops.h"
#include "aotgrad/random.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::contains;
using testing::error_of;
namespace samplers = data::samplers;
namespace transforms = data::transforms;

std::vector<std::vector<size_t>> drain(samplers::Sampler<>& s, size_t batch) {
  std::vector<std::vector<size_t>> out;
  while (auto r = s.next(batch)) out.push_back(*r);
  return out;
}

TEST(DataSamplers, SequentialBatchesInOrderAndResets) {
  samplers::SequentialSampler s(5);
  EXPECT_EQ(drain(s, 2), (std::vector<std::vector<size_t>>{{0, 1}, {2, 3}, {4}}));
  s.reset(3);
  EXPECT_EQ(drain(s, 4), (std::vector<std::vector<size_t>>{{0, 1, 2}}));
}

TEST(DataSamplers, RandomIsAPermutationReproducibleUnderManualSeed) {
  manual_seed(7);
  samplers::RandomSampler a(100);
  std::vector<size_t> first = *a.next(100);
  std::vector<size_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  std::vector<size_t> iota(100);
  std::iota(iota.begin(), iota.end(), size_t{0});
  EXPECT_EQ(sorted, iota);
  EXPECT_NE(first, iota);
  a.reset();
  EXPECT_NE(*a.next(100), first);  // a new epoch draws a new order
  manual_seed(7);
  samplers::RandomSampler b(100);
  EXPECT_EQ(*b.next(100), first);
}

TEST(DataSamplers, PermutationIsRoughlyUniform) {
  // Where index 0 lands over 4000 permutations of 4: each slot near 1000 (binomial sd ~27).
  std::vector<int> slot(4);
  for (uint64_t k = 0; k < 4000; ++k) {
    std::vector<size_t> p = samplers::philox_permutation(4, 11, 2 * k);
    ++slot[static_cast<size_t>(std::find(p.begin(), p.end(), size_t{0}) - p.begin())];
  }
  for (int c : slot) EXPECT_NEAR(c, 1000, 150);
}

TEST(DataSamplers, DistributedReplicasPartitionAnEpoch) {
  for (bool random : {false, true}) {
    std::multiset<size_t> seen;
    for (size_t rank = 0; rank < 3; ++rank) {
      std::vector<std::vector<size_t>> batches;
      if (random) {
        samplers::DistributedRandomSampler s(10, 3, rank);
        s.set_epoch(4);
        s.reset();
        batches = drain(s, 3);
      } else {
        samplers::DistributedSequentialSampler s(10, 3, rank);
        batches = drain(s, 3);
      }
      size_t n = 0;
      for (auto& b : batches) {
        n += b.size();
        seen.insert(b.begin(), b.end());
      }
      EXPECT_EQ(n, 4u);  // ceil(10 / 3), wrapping around with allow_duplicates
    }
    for (size_t i = 0; i < 10; ++i) EXPECT_GE(seen.count(i), 1u) << i;
    EXPECT_EQ(seen.size(), 12u);
  }
  samplers::DistributedSequentialSampler no_dup(10, 3, 2, /*allow_duplicates=*/false);
  EXPECT_EQ(drain(no_dup, 8), (std::vector<std::vector<size_t>>{{6, 7, 8}}));
  EXPECT_TRUE(contains(error_of([] { samplers::DistributedRandomSampler(10, 2, 2); }),
                       "rank 2 is not below num_replicas 2"));
}

TEST(DataTransforms, NormalizePerChannelAndStack) {
  Tensor img = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  transforms::Normalize<> norm({1.0, 5.0}, {2.0, 0.5});
  data::Example<> e = norm.apply({img, from_vector(std::vector<int64_t>{3}, {})});
  EXPECT_EQ(testing::values(e.data), (std::vector<float>{0, 0.5, 1, 1.5, 0, 2, 4, 6}));
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  EXPECT_TRUE(contains(error_of([&] {
                         transforms::Normalize<>({1, 2, 3}, {1, 1, 1})(img);
                       }),
                       "3 channel values for data of shape [2, 2, 2]"));
  EXPECT_TRUE(contains(error_of([] { transforms::Normalize<>(0.0, 0.0); }), "nonzero"));

  transforms::Stack<> stack;
  data::Example<> batch = stack.apply_batch({e, e, e});
  EXPECT_EQ(batch.data.sizes(), (IntList{3, 2, 2, 2}));
  EXPECT_EQ(batch.target.sizes(), (IntList{3}));
}

// Row i holds i in every column; the target is i * 10.
struct Rows : data::datasets::Dataset<Rows> {
  explicit Rows(size_t n, std::atomic<int>* calls = nullptr) : n(n), calls(calls) {}
  data::Example<> get(size_t i) override {
    if (calls) ++*calls;
    if (i == throw_at) throw std::runtime_error("row " + std::to_string(i) + " is bad");
    auto v = static_cast<float>(i);
    return {from_vector(std::vector<float>{v, v}, {2}),
            from_vector(std::vector<int64_t>{static_cast<int64_t>(i) * 10}, {})};
  }
  std::optional<size_t> size() const override { return n; }
  size_t n;
  std::atomic<int>* calls;
  size_t throw_at = SIZE_MAX;
};

std::vector<std::vector<int64_t>> epoch_targets(size_t workers, bool drop_last, size_t n = 10) {
  auto loader = data::make_data_loader<samplers::SequentialSampler>(
      Rows(n).map(transforms::Stack<>()),
      data::DataLoaderOptions().batch_size(4).workers(workers).drop_last(drop_last));
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : *loader) {
    EXPECT_EQ(batch.data.sizes()[1], 2);
    out.push_back(batch.target.to_vector<int64_t>());
  }
  return out;
}

TEST(ConcurrencyDataLoader, BatchesInSamplerOrderWithAndWithoutWorkers) {
  std::vector<std::vector<int64_t>> expected{{0, 10, 20, 30}, {40, 50, 60, 70}, {80, 90}};
  EXPECT_EQ(epoch_targets(0, false), expected);
  EXPECT_EQ(epoch_targets(2, false), expected);
  EXPECT_EQ(epoch_targets(3, false), expected);
  expected.pop_back();
  EXPECT_EQ(epoch_targets(0, true), expected);
  EXPECT_EQ(epoch_targets(2, true), expected);
}

TEST(ConcurrencyDataLoader, EpochsRestartAndAnAbandonedEpochIsDiscarded) {
  std::atomic<int> calls{0};
  manual_seed(3);
  auto loader = data::make_data_loader(Rows(64, &calls).map(transforms::Stack<>()),
                                       data::DataLoaderOptions().batch_size(8).workers(2));
  for (int epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int64_t> seen;
    for (auto& batch : *loader)
      for (int64_t t : batch.target.to_vector<int64_t>()) seen.insert(t);
    EXPECT_EQ(seen.size(), 64u);
    EXPECT_EQ(*seen.rbegin(), 630);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 64u);
  }
  for (auto& batch : *loader) {  // leave after one batch; the next epoch starts clean
    EXPECT_EQ(batch.target.sizes()[0], 8);
    break;
  }
  size_t batches = 0;
  for (auto& batch : *loader) batches += batch.target.sizes()[0] == 8 ? 1 : 0;
  EXPECT_EQ(batches, 8u);
}

TEST(ConcurrencyDataLoader, WorkerErrorsReachTheLoop) {
  for (size_t workers : {0u, 2u}) {
    Rows rows(10);
    rows.throw_at = 5;
    auto loader = data::make_data_loader<samplers::SequentialSampler>(
        std::move(rows).map(transforms::Stack<>()),
        data::DataLoaderOptions().batch_size(4).workers(workers));
    size_t before = 0;
    std::string error = error_of<std::runtime_error>([&] {
      for (auto& batch : *loader) before += static_cast<size_t>(batch.target.sizes()[0]);
    });
    EXPECT_EQ(error, "row 5 is bad");
    EXPECT_EQ(before, 4u);
  }
}

TEST(ConcurrencyDataLoader, UnorderedWorkersStillDeliverEveryBatchOnce) {
  auto loader = data::make_data_loader<samplers::SequentialSampler>(
      Rows(50).map(transforms::Stack<>()),
      data::DataLoaderOptions().batch_size(5).workers(3).enforce_ordering(false).max_jobs(4));
  std::multiset<int64_t> seen;
  for (auto& batch : *loader)
    for (int64_t t : batch.target.to_vector<int64_t>()) seen.insert(t);
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 50u);
}

TEST(ConcurrencyDataLoader, TensorDatasetAndLambdaTransforms) {
  Tensor t = testing::iota({6, 3});
  auto ds = data::datasets::TensorDataset(t)
                .map(transforms::Lambda<data::TensorExample>([](data::TensorExample e) {
                  return data::TensorExample(mul(e.data, Scalar(2.0)));
                }))
                .map(transforms::Stack<data::TensorExample>());
  auto loader = data::make_data_loader<samplers::SequentialSampler>(std::move(ds), 4);
  std::vector<float> all;
  for (auto& batch : *loader)
    for (float v : testing::values(batch.data)) all.push_back(v);
  ASSERT_EQ(all.size(), 18u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], 2.0f * static_cast<float>(i));
  EXPECT_TRUE(contains(error_of([] { data::datasets::TensorDataset ds{Tensor()}; }),
                       "at least one dimension"));
  EXPECT_TRUE(contains(error_of([&] {
                         data::make_data_loader(data::datasets::TensorDataset(t),
                                                data::DataLoaderOptions().batch_size(0));
                       }),
                       "batch_size must be at least 1"));
}

}  // namespace
}  // namespace aotgrad
