// Seeded random numbers: a counter-based Philox4x32-10 generator (seed + offset), so any stream
// position can be reproduced from two integers.
//
// Functionalized RNG (docs/partitioning.md "Random ops"): inside a traced function the random
// ops read no generator; they become aotgrad.philox_* nodes that take the generator's (seed,
// offset) as graph inputs (descriptors fw_rng_seed(), fw_rng_offset(N)) plus their own offset
// relative to the call. Each call of the compiled function reads the calling thread's
// default_generator() and advances it by the N blocks eager would have drawn, so eager and
// compiled calls draw the same numbers from the same seed, call after call, in any mix.
#pragma once

#include <cstdint>

#include "aotgrad/tensor.h"

namespace aotgrad {

// Everything a Generator's future draws depend on (save it, run something, restore it, and the
// draws repeat, as torch.get_rng_state / set_rng_state).
struct GeneratorState {
  uint64_t seed = 0;
  uint64_t offset = 0;  // in Philox blocks of 4 32-bit words
  bool operator==(const GeneratorState&) const = default;
};

// Not synchronized: one Generator is used by one thread at a time (the default one is per
// thread).
class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ULL) : seed_(seed) {}
  void manual_seed(uint64_t seed) {
    seed_ = seed;
    offset_ = 0;
  }
  uint64_t seed() const { return seed_; }
  uint64_t offset() const { return offset_; }
  GeneratorState get_state() const { return {seed_, offset_}; }
  void set_state(const GeneratorState& s) {
    seed_ = s.seed;
    offset_ = s.offset;
  }
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
GeneratorState get_rng_state();  // of the calling thread's default generator
void set_rng_state(const GeneratorState& state);

// Philox4x32-10: four 32-bit random words for (seed, counter).
void philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]);

// ---- random ops built on rand / randn (ops/random.cpp): they trace into philox nodes ----
// All draw from the calling thread's default generator, as rand does.

// Uniform on [0, 1) / standard normal with `like`'s sizes and dtype (floating).
Tensor rand_like(const Tensor& like);
Tensor randn_like(const Tensor& like);
// 0/1 in p's dtype: element k is 1 with probability p[k] (torch.bernoulli(p)); never requires
// grad.
Tensor bernoulli(const Tensor& p);
// 0/1 in self's dtype and shape, each 1 with probability p (torch.bernoulli(self, p)).
Tensor bernoulli(const Tensor& self, double p);
// In place: self's elements become 0/1, each 1 with probability p (Tensor.bernoulli_(float), as
// torchvision's stochastic depth uses) / p[k] (Tensor.bernoulli_(Tensor), p broadcast to self).
Tensor& bernoulli_(Tensor& self, double p);
Tensor& bernoulli_(Tensor& self, const Tensor& p);
// Integers uniform in [low, high) (torch.randint); i64 unless `dtype` says otherwise.
Tensor randint(int64_t low, int64_t high, const IntList& sizes, DType dtype = DType::i64);
// mean + std * randn(sizes) (torch.normal(mean, std, size)).
Tensor normal(double mean, double std, const IntList& sizes, DType dtype = DType::f32);
// In place: uniform on [from, to) (Tensor.uniform_).
Tensor& uniform_(Tensor& self, double from = 0.0, double to = 1.0);

}  // namespace aotgrad
