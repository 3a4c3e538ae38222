// math_choice.h's kernels, compiled once per Highway target like kernels.cpp (which is the
// reading guide for the dispatch pattern).
// The include order matters (foreach_target.h re-includes this file per target, Highway's -inl
// headers follow it), so clang-format leaves it alone.
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/vec/math_choice.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cstddef>

#include "kernels/vec/math-inl.h"
#include "kernels/vec/math_choice.h"
// clang-format on

HWY_BEFORE_NAMESPACE();
namespace aotgrad::kernels::vec::HWY_NAMESPACE {

// y = f(x) over n floats; the tail goes through a zeroed stack buffer.
template <class F>
HWY_INLINE void MapF32(const float* x, float* y, int64_t n, const F& f) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d), len = static_cast<size_t>(n);
  size_t i = 0;
  for (; i + lanes <= len; i += lanes) hn::StoreU(f(d, hn::LoadU(d, x + i)), d, y + i);
  if (i < len) {
    HWY_ALIGN float buf[hn::MaxLanes(d)] = {};
    std::copy(x + i, x + len, buf);
    hn::Store(f(d, hn::Load(d, buf)), d, buf);
    std::copy(buf, buf + (len - i), y + i);
  }
}

#define AOTGRAD_CANDIDATE(fn, Ours, Theirs)                                         \
  void fn##_sleef(const float* x, float* y, int64_t n, float) {                     \
    MapF32(x, y, n, [](auto d, auto v) { return vec::HWY_NAMESPACE::Ours(d, v); }); \
  }                                                                                 \
  void fn##_highway(const float* x, float* y, int64_t n, float) {                   \
    MapF32(x, y, n, [](auto d, auto v) { return hn::Theirs(d, v); });               \
  }
AOTGRAD_CANDIDATE(exp, Exp, Exp)
AOTGRAD_CANDIDATE(log, Log, Log)
AOTGRAD_CANDIDATE(tanh, Tanh, Tanh)
#undef AOTGRAD_CANDIDATE

const MathCandidate* GetCandidates() {
  static const MathCandidate kList[] = {{"exp", &exp_sleef, &exp_highway},
                                        {"log", &log_sleef, &log_highway},
                                        {"tanh", &tanh_sleef, &tanh_highway}};
  return kList;
}

}  // namespace aotgrad::kernels::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace aotgrad::kernels::vec {

HWY_EXPORT(GetCandidates);

std::span<const MathCandidate> math_candidates() {
  static const MathCandidate* const list = HWY_DYNAMIC_DISPATCH(GetCandidates)();
  return {list, 3};
}

}  // namespace aotgrad::kernels::vec
#endif  // HWY_ONCE
