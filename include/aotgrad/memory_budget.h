// Selective activation checkpointing: a memory budget for the part of a traced function that runs
// while a guard is alive (PyTorch's per-region set_memory_budget / MemoryBudgetMode).
//
//   auto step = ag::aot_function(
//       [](const Tensor& x, const Tensor& w1, const Tensor& w2) {
//         Tensor h;
//         {
//           ag::MemoryBudgetGuard recompute_all(0.0);  // nodes traced here: recompute in backward
//           h = ag::gelu(ag::mm(x, w1));
//         }
//         return ag::mm(h, w2).sum();  // outside: AotConfig::activation_memory_budget
//       },
//       {.partitioner = "min_cut"});
//
// The budget means what AotConfig::activation_memory_budget means (0 = keep only what the region
// reads from outside and recompute the rest, matmuls included; 1 = the runtime-optimal min cut),
// applied to the nodes traced inside the region. Only the "min_cut" partitioner reads it. Guards
// nest (the innermost wins) and are per thread; outside any trace they have no effect.
#pragma once

#include <optional>

namespace aotgrad {

class MemoryBudgetGuard {
 public:
  // Throws std::invalid_argument when `budget` is not in [0, 1].
  explicit MemoryBudgetGuard(double budget);
  ~MemoryBudgetGuard();
  MemoryBudgetGuard(const MemoryBudgetGuard&) = delete;
  MemoryBudgetGuard& operator=(const MemoryBudgetGuard&) = delete;

 private:
  std::optional<double> prev_;
};

// The budget of the innermost live MemoryBudgetGuard on this thread, if any.
std::optional<double> current_memory_budget();

}  // namespace aotgrad
