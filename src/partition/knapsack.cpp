#include "partition/knapsack.h"

namespace aotgrad::partition {

Knapsack::Knapsack(std::vector<KnapsackItem> items, size_t max_capacity)
    : items_(std::move(items)), max_capacity_(max_capacity), best_(max_capacity + 1) {
  take_.assign(items_.size(), std::vector<bool>(max_capacity + 1, false));
  // best_ holds the optimum over items 0..i-1; updating capacities from the top keeps each item
  // used at most once.
  for (size_t i = 0; i < items_.size(); ++i) {
    const KnapsackItem& it = items_[i];
    if (it.weight > max_capacity) continue;
    for (size_t c = max_capacity + 1; c-- > it.weight;) {
      const Cell& without = best_[c];
      const Cell& rest = best_[c - it.weight];
      Cell with{rest.value + it.value, rest.weight + it.weight};
      if (with.value > without.value ||
          (with.value == without.value && with.weight < without.weight)) {
        best_[c] = with;
        take_[i][c] = true;
      }
    }
  }
}

std::vector<bool> Knapsack::packing(size_t capacity) const {
  std::vector<bool> taken(items_.size(), false);
  size_t c = capacity;
  for (size_t i = items_.size(); i-- > 0;) {
    if (!take_[i][c]) continue;
    taken[i] = true;
    c -= items_[i].weight;
  }
  return taken;
}

}  // namespace aotgrad::partition
