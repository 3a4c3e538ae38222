// Samplers (LibTorch's torch::data::samplers): which indices the next batch holds.
//
// next(n) returns up to n indices, or nothing when the epoch is over; reset() starts a new epoch
// (with a new dataset size when given). RandomSampler draws its permutation from the calling
// thread's default_generator() at reset, so manual_seed makes the order reproducible. A sampler is
// used by one thread at a time (the data loader calls it from the thread that iterates).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace aotgrad::data::samplers {

template <typename BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  virtual void reset(std::optional<size_t> new_size) = 0;
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

class SequentialSampler : public Sampler<> {
 public:
  explicit SequentialSampler(size_t size) : size_(size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  size_t size_, index_ = 0;
};

class RandomSampler : public Sampler<> {
 public:
  explicit RandomSampler(int64_t size);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  size_t index() const noexcept { return index_; }

 private:
  std::vector<size_t> indices_;
  size_t index_ = 0;
};

// One replica's share of an epoch when `num_replicas` processes train on one dataset: each
// replica sees size / num_replicas indices (rounded up, wrapping around the dataset when
// allow_duplicates), disjoint from the other replicas' within an epoch.
class DistributedSampler : public Sampler<> {
 public:
  DistributedSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                     bool allow_duplicates = true);
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const noexcept { return epoch_; }

 protected:
  size_t local_sample_count() const;
  size_t size_, num_replicas_, rank_, epoch_ = 0;
  bool allow_duplicates_;
};

// Shuffled by (epoch, seed): every replica computes the same permutation for an epoch.
class DistributedRandomSampler : public DistributedSampler {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                           bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;

 private:
  std::vector<size_t> all_indices_;
  size_t sample_index_ = 0;
};

class DistributedSequentialSampler : public DistributedSampler {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                               bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  std::optional<std::vector<size_t>> next(size_t batch_size) override;

 private:
  size_t begin_index_ = 0, end_index_ = 0, sample_index_ = 0;
};

// A random permutation of 0..n-1 (Fisher-Yates) drawn from Philox at (seed, offset): the same
// arguments give the same permutation on every machine.
std::vector<size_t> philox_permutation(size_t n, uint64_t seed, uint64_t offset);

}  // namespace aotgrad::data::samplers
