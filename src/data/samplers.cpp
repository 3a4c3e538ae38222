// Samplers: sequential, random (Philox permutation from the default generator) and the
// distributed pair (one replica's slice of an epoch).
#include "aotgrad/data/samplers.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "aotgrad/random.h"

namespace aotgrad::data::samplers {

namespace {

// The next up-to-n indices of `indices` from `index` on.
std::optional<std::vector<size_t>> take(const std::vector<size_t>& indices, size_t& index,
                                        size_t n) {
  if (index >= indices.size()) return std::nullopt;
  size_t end = std::min(indices.size(), index + n);
  std::vector<size_t> out(indices.begin() + static_cast<std::ptrdiff_t>(index),
                          indices.begin() + static_cast<std::ptrdiff_t>(end));
  index = end;
  return out;
}

}  // namespace

std::vector<size_t> philox_permutation(size_t n, uint64_t seed, uint64_t offset) {
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t{0});
  // Fisher-Yates with one 64-bit draw (two Philox words) per step; j = floor(draw * (i+1) / 2^64)
  // is uniform up to a bias below 2^-40 for any n that fits in memory.
  uint32_t words[4];
  for (size_t i = n; i > 1; --i) {
    size_t step = n - i;  // 0, 1, ...: two steps per Philox block
    if (step % 2 == 0) philox4x32(seed, offset + step / 2, words);
    uint64_t draw = (uint64_t{words[(step % 2) * 2]} << 32) | words[(step % 2) * 2 + 1];
    size_t j = static_cast<size_t>((static_cast<unsigned __int128>(draw) * i) >> 64);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  index_ = 0;
}

std::optional<std::vector<size_t>> SequentialSampler::next(size_t batch_size) {
  if (index_ >= size_) return std::nullopt;
  size_t end = std::min(size_, index_ + batch_size);
  std::vector<size_t> out(end - index_);
  std::iota(out.begin(), out.end(), index_);
  index_ = end;
  return out;
}

RandomSampler::RandomSampler(int64_t size) {
  if (size < 0)
    throw std::invalid_argument("RandomSampler: size must be >= 0, got " + std::to_string(size));
  reset(static_cast<size_t>(size));
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  size_t n = new_size.value_or(indices_.size());
  Generator& gen = default_generator();
  uint64_t offset = gen.advance(2 * static_cast<uint64_t>(n));
  indices_ = philox_permutation(n, gen.seed(), offset);
  index_ = 0;
}

std::optional<std::vector<size_t>> RandomSampler::next(size_t batch_size) {
  return take(indices_, index_, batch_size);
}

DistributedSampler::DistributedSampler(size_t size, size_t num_replicas, size_t rank,
                                       bool allow_duplicates)
    : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
  if (num_replicas == 0)
    throw std::invalid_argument("DistributedSampler: num_replicas must be at least 1");
  if (rank >= num_replicas)
    throw std::invalid_argument("DistributedSampler: rank " + std::to_string(rank) +
                                " is not below num_replicas " + std::to_string(num_replicas));
}

size_t DistributedSampler::local_sample_count() const {
  return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  reset();
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  // Every replica shuffles with the epoch as the seed, so their slices partition one permutation.
  std::vector<size_t> perm = philox_permutation(size_, epoch_, 0);
  size_t count = local_sample_count();
  all_indices_.clear();
  for (size_t k = 0; k < count && size_ > 0; ++k)
    all_indices_.push_back(perm[(rank_ * count + k) % size_]);
  sample_index_ = 0;
}

std::optional<std::vector<size_t>> DistributedRandomSampler::next(size_t batch_size) {
  return take(all_indices_, sample_index_, batch_size);
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas,
                                                           size_t rank, bool allow_duplicates)
    : DistributedSampler(size, num_replicas, rank, allow_duplicates) {
  reset();
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  begin_index_ = rank_ * local_sample_count();
  end_index_ = begin_index_ + local_sample_count();
  sample_index_ = begin_index_;
}

std::optional<std::vector<size_t>> DistributedSequentialSampler::next(size_t batch_size) {
  if (sample_index_ >= end_index_ || size_ == 0) return std::nullopt;
  size_t end = std::min(end_index_, sample_index_ + batch_size);
  std::vector<size_t> out;
  out.reserve(end - sample_index_);
  for (size_t i = sample_index_; i < end; ++i) out.push_back(i % size_);
  sample_index_ = end;
  return out;
}

}  // namespace aotgrad::data::samplers
