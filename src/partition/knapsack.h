// The 0/1 knapsack behind the memory budget: which compute-heavy results to keep (and so not
// recompute) within a byte budget, maximising the recompute cost avoided.
#pragma once

#include <cstddef>
#include <vector>

namespace aotgrad::partition {

struct KnapsackItem {
  size_t weight = 0;  // in capacity units (bytes, quantized by the caller; rounded up)
  double value = 0;   // what keeping the item is worth (recompute time avoided)
};

// Solves the knapsack for every integer capacity 0..max_capacity at once by dynamic programming
// (O(items x max_capacity) time, one bit per item and capacity for the choices).
// Ties in value go to the lighter packing, then to the earlier items, so that the packings of
// neighbouring capacities tend to nest.
class Knapsack {
 public:
  Knapsack(std::vector<KnapsackItem> items, size_t max_capacity);

  size_t max_capacity() const { return max_capacity_; }
  // An optimal packing for `capacity` (<= max_capacity): taken[i] for item i.
  std::vector<bool> packing(size_t capacity) const;
  double best_value(size_t capacity) const { return best_.at(capacity).value; }

 private:
  struct Cell {
    double value = 0;
    size_t weight = 0;
  };
  std::vector<KnapsackItem> items_;
  size_t max_capacity_;
  std::vector<Cell> best_;               // after all items, by capacity
  std::vector<std::vector<bool>> take_;  // take_[i][c]: item i taken in the optimum for (0..i, c)
};

}  // namespace aotgrad::partition
