// Chains of view steps (functionalize.h's ViewStep): where as_strided sits in them, the chain
// eager sees after a write, and whether a tensor's elements fill its storage densely. Internal
// to src/trace; Tracer's members that keep views up to date (replay, sync, the scatters of a
// write into the root) are in view_chain.cpp beside these.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "trace/functionalize.h"

namespace aotgrad::trace {

bool is_as_strided(const ViewStep& step);
bool is_expand(const ViewStep& step);
// The last as_strided step among the first `steps` of `chain`, or SIZE_MAX. as_strided's
// geometry is absolute over the storage, so the view it makes does not depend on the steps
// before it: only on which storage they reached, and on autograd (a detach() between, grad modes).
size_t last_as_strided(const std::vector<ViewStep>& chain, size_t steps);

// The last detach() step before step `k`, or SIZE_MAX.
size_t last_detach_before(const std::vector<ViewStep>& chain, size_t k);

// The dims of a tensor in the order its storage holds them, outermost first, when its elements
// fill numel consecutive positions of the storage (no gaps, no overlaps); nullopt otherwise.
std::optional<std::vector<int64_t>> dense_order(const IntList& sizes, const IntList& strides);

// Whether the window of as_strided `step` (sizes, strides, absolute offset) lies within the
// `count` storage positions from `first` on.
bool window_within(const ViewStep& step, int64_t first, int64_t count);

// Whether every position the window of as_strided `step` reaches is one of the positions
// (sizes, strides) reaches from `first` on. False (conservatively) past a few million positions.
bool window_within_positions(const ViewStep& step, int64_t first, const IntList& sizes,
                             const IntList& strides);

// The first `steps` of `chain` as eager sees a view it regenerates after a write to its storage:
// from its last as_strided step on, applied to the root (or to the last detach()ed alias before
// it, a tensor of its own for autograd), not to the view before it. The elements are the same
// (as_strided addresses the storage); the gradient is that of as_strided of the base, which
// differs from the chain's where as_strided reaches past the elements of the view it was applied
// to. A step before it made under no_grad left the view without gradient, and still does.
std::vector<ViewStep> rebased_chain(const std::vector<ViewStep>& chain, size_t steps);

}  // namespace aotgrad::trace
