// Seeded random numbers: a counter-based Philox4x32-10 generator (seed + offset), so any stream
// position can be reproduced from two integers.
#pragma once

#include <cstdint>

namespace aotgrad {

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  // Reserves `n` 32-bit draws and returns the offset (in 4-draw blocks) where they start.
  uint64_t advance(uint64_t n) {
    uint64_t start = offset_;
    offset_ += (n + 3) / 4;
    return start;
  }

 private:
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The generator used when none is passed (one per thread).
Generator& default_generator();
void manual_seed(uint64_t seed);

// Philox4x32-10: four 32-bit random words for (seed, counter).
void philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]);

}  // namespace aotgrad
