// Data loaders (LibTorch's torch::data::make_data_loader): batches of a dataset, in the order a
// sampler gives, optionally prepared by worker threads ahead of the training loop.
//
//   auto loader = data::make_data_loader<data::samplers::SequentialSampler>(
//       std::move(dataset), data::DataLoaderOptions().batch_size(64).workers(2));
//   for (auto& batch : *loader) { ... batch.data, batch.target ... }
//
// Each range-for (each begin()) is one epoch: the sampler is reset and the batches of the
// previous epoch still in flight are discarded. With workers(n > 0), n threads call the
// dataset's get_batch at once (datasets must allow that, see datasets.h) and up to max_jobs
// batches (default 2n) are prepared ahead; enforce_ordering (default) hands them out in the
// sampler's order, so the batches are the same as with workers(0). An exception thrown by
// get_batch reaches the loop that asked for that batch. drop_last skips a final batch smaller than
// batch_size. A loader is iterated by one thread at a time.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "aotgrad/data/samplers.h"

namespace aotgrad::data {

// Options, LibTorch style: `opts.batch_size(64)` sets and returns *this, `opts.batch_size()` reads.
class DataLoaderOptions {
 public:
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}  // NOLINT: LibTorch allows it

  DataLoaderOptions& batch_size(size_t v) { return batch_size_ = v, *this; }
  DataLoaderOptions& workers(size_t v) { return workers_ = v, *this; }
  DataLoaderOptions& max_jobs(size_t v) { return max_jobs_ = v, *this; }
  DataLoaderOptions& enforce_ordering(bool v) { return enforce_ordering_ = v, *this; }
  DataLoaderOptions& drop_last(bool v) { return drop_last_ = v, *this; }
  size_t batch_size() const { return batch_size_; }
  size_t workers() const { return workers_; }
  size_t max_jobs() const { return max_jobs_.value_or(2 * workers_); }
  bool enforce_ordering() const { return enforce_ordering_; }
  bool drop_last() const { return drop_last_; }

 private:
  size_t batch_size_ = 1, workers_ = 0;
  std::optional<size_t> max_jobs_;
  bool enforce_ordering_ = true, drop_last_ = false;
};

template <typename Dataset, typename Sampler>
class StatelessDataLoader {
 public:
  using BatchType = typename Dataset::BatchType;
  using BatchRequestType = typename Sampler::BatchRequestType;

  StatelessDataLoader(Dataset dataset, Sampler sampler, DataLoaderOptions options)
      : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(options) {
    if (options_.batch_size() == 0)
      throw std::invalid_argument("DataLoaderOptions: batch_size must be at least 1");
    if (options_.workers() > 0 && options_.max_jobs() == 0)
      throw std::invalid_argument("DataLoaderOptions: max_jobs must be at least 1 with workers");
    for (size_t i = 0; i < options_.workers(); ++i) threads_.emplace_back([this] { work(); });
  }
  ~StatelessDataLoader() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    jobs_ready_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  StatelessDataLoader(const StatelessDataLoader&) = delete;
  StatelessDataLoader& operator=(const StatelessDataLoader&) = delete;

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = BatchType;
    using difference_type = std::ptrdiff_t;
    using pointer = BatchType*;
    using reference = BatchType&;

    Iterator() = default;
    explicit Iterator(StatelessDataLoader* loader) : loader_(loader), batch_(loader->next()) {}
    BatchType& operator*() { return *batch_; }
    BatchType* operator->() { return &*batch_; }
    Iterator& operator++() {
      batch_ = loader_->next();
      return *this;
    }
    // Only comparison with end() (or another finished iterator) is meaningful, as in LibTorch.
    bool operator==(const Iterator& o) const { return !batch_ && !o.batch_; }
    bool operator!=(const Iterator& o) const { return !(*this == o); }

   private:
    StatelessDataLoader* loader_ = nullptr;
    std::optional<BatchType> batch_;
  };

  // Starts an epoch.
  Iterator begin() {
    reset();
    return Iterator(this);
  }
  Iterator end() { return Iterator(); }
  const DataLoaderOptions& options() const noexcept { return options_; }

 private:
  struct Job {
    size_t epoch, sequence;
    BatchRequestType request;
  };
  struct Result {
    std::optional<BatchType> batch;
    std::exception_ptr error;
  };

  void reset() {
    sampler_.reset(dataset_.size());
    std::lock_guard<std::mutex> lock(mu_);
    ++epoch_;  // results of the previous epoch still in flight are dropped when they arrive
    jobs_.clear();
    results_.clear();
    next_sequence_ = next_to_hand_out_ = in_flight_ = 0;
    sampler_done_ = false;
  }

  // Sets `out` to the next request of the epoch; false when there is none (the sampler is
  // exhausted, or only a short final batch remains and drop_last is set). Called on the
  // iterating thread only.
  bool next_request(BatchRequestType& out) {
    if (sampler_done_) return false;
    std::optional<BatchRequestType> r = sampler_.next(options_.batch_size());
    if (!r.has_value() || r->empty() ||
        (options_.drop_last() && r->size() < options_.batch_size())) {
      sampler_done_ = true;
      return false;
    }
    out.swap(*r);
    return true;
  }

  std::optional<BatchType> next() {
    if (threads_.empty()) {
      BatchRequestType r;
      if (!next_request(r)) return std::nullopt;
      return dataset_.get_batch(std::move(r));
    }
    std::unique_lock<std::mutex> lock(mu_);
    // Keep up to max_jobs requests queued or running.
    while (in_flight_ + results_.size() < options_.max_jobs()) {
      lock.unlock();
      BatchRequestType r;
      bool more = next_request(r);
      lock.lock();
      if (!more) break;
      jobs_.push_back({epoch_, next_sequence_++, std::move(r)});
      ++in_flight_;
      jobs_ready_.notify_one();
    }
    if (next_to_hand_out_ == next_sequence_) return std::nullopt;  // nothing left this epoch
    auto ready = [&] {
      return options_.enforce_ordering() ? results_.count(next_to_hand_out_) > 0
                                         : !results_.empty();
    };
    results_ready_.wait(lock, ready);
    auto it = options_.enforce_ordering() ? results_.find(next_to_hand_out_) : results_.begin();
    Result result = std::move(it->second);
    results_.erase(it);
    ++next_to_hand_out_;
    if (result.error) std::rethrow_exception(result.error);
    return std::move(result.batch);
  }

  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      jobs_ready_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      Job job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      Result result;
      try {
        result.batch.emplace(dataset_.get_batch(std::move(job.request)));
      } catch (...) {
        result.error = std::current_exception();
      }
      lock.lock();
      if (job.epoch != epoch_) continue;  // begin() was called again meanwhile
      --in_flight_;
      results_.emplace(job.sequence, std::move(result));
      results_ready_.notify_all();
    }
  }

  Dataset dataset_;
  Sampler sampler_;
  DataLoaderOptions options_;
  std::vector<std::thread> threads_;

  std::mutex mu_;  // guards everything below
  std::condition_variable jobs_ready_, results_ready_;
  std::deque<Job> jobs_;
  std::map<size_t, Result> results_;  // by sequence number
  size_t epoch_ = 0, next_sequence_ = 0, next_to_hand_out_ = 0, in_flight_ = 0;
  bool sampler_done_ = false, stopping_ = false;
};

// A loader over `dataset` with `sampler`. Constrained, so that LibTorch's
// `make_data_loader<SequentialSampler>(dataset, 64)` (the sampler type named, a batch size given)
// selects the overload below instead of taking the sampler type for a dataset and 64 for a sampler.
template <typename Dataset, typename Sampler>
  requires requires {
    typename Dataset::BatchType;
    typename Sampler::BatchRequestType;
  }
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
    Dataset dataset, Sampler sampler, DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<StatelessDataLoader<Dataset, Sampler>>(std::move(dataset),
                                                                 std::move(sampler), options);
}

// A loader whose sampler is built from the dataset's size (RandomSampler by default, as in
// LibTorch). The dataset must know its size.
template <typename Sampler = samplers::RandomSampler, typename Dataset>
std::unique_ptr<StatelessDataLoader<Dataset, Sampler>> make_data_loader(
    Dataset dataset, DataLoaderOptions options = DataLoaderOptions()) {
  std::optional<size_t> size = dataset.size();
  if (!size)
    throw std::invalid_argument(
        "make_data_loader: the dataset has no size(); pass a sampler explicitly");
  Sampler sampler(*size);
  return make_data_loader(std::move(dataset), std::move(sampler), options);
}

}  // namespace aotgrad::data
