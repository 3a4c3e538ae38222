#include "kernels/random.h"

#include <algorithm>

#include "aotgrad/random.h"
#include "kernels/data.h"

namespace aotgrad::kernels {
namespace {
constexpr int64_t kParallelWork = 32768;
}  // namespace

int64_t dropout_blocks(int64_t numel) {
  return (numel + 3) / 4;
}

Tensor dropout_mask(const IntList& sizes, double keep_prob, uint64_t seed, uint64_t block_offset) {
  Tensor mask = make_tensor(sizes, DType::b8);
  const int64_t n = mask.numel();
  bool* ms = reinterpret_cast<bool*>(mask.impl()->data_bytes());
  const double threshold = keep_prob * 4294967296.0;  // keep_prob 1 keeps every word
  const int64_t blocks = dropout_blocks(n);
#pragma omp parallel for if (n > kParallelWork)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    uint32_t words[4];
    philox4x32(seed, block_offset + static_cast<uint64_t>(blk), words);
    const int64_t k0 = blk * 4, k1 = std::min(n, k0 + 4);
    for (int64_t k = k0; k < k1; ++k) ms[k] = static_cast<double>(words[k - k0]) < threshold;
  }
  return mask;
}

}  // namespace aotgrad::kernels
