// The per-call input plan (src/aot/input_plan.cpp): the storage-bucketed plan_inputs must give
// exactly the plan of the pairwise reference on any alias structure — duplicates, overlapping
// and non-overlapping views of shared storages, detached aliases, fresh tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "aot/input_plan.h"
#include "aotgrad/aotgrad.h"
#include "trace/functionalize.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::aot::InputPlan;

namespace {

// One random call: inputs drawn from a few bases, as themselves, repeated, or as views.
std::vector<Tensor> random_inputs(std::mt19937& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  std::vector<Tensor> bases;
  for (int b = 0, nb = 1 + pick(3); b < nb; ++b) bases.push_back(ag::zeros({6, 4}));
  std::vector<Tensor> inputs;
  for (int k = 0, n = 1 + pick(12); k < n; ++k) {
    const Tensor& base = bases[pick(static_cast<int>(bases.size()))];
    switch (pick(8)) {
      case 0:
        inputs.push_back(base);
        break;
      case 1:
        inputs.push_back(ag::zeros({3}));
        break;  // a storage of its own
      case 2:
        if (!inputs.empty()) {
          inputs.push_back(inputs[pick(static_cast<int>(inputs.size()))]);  // the same tensor
          break;
        }
        [[fallthrough]];
      case 3: {
        int64_t start = pick(6);
        inputs.push_back(base.slice(0, start, start + 1 + pick(static_cast<int>(6 - start))));
        break;
      }
      case 4:
        inputs.push_back(base.select(1, pick(4)));
        break;  // columns never overlap
      case 5:
        inputs.push_back(base.select(0, pick(6)));
        break;
      case 6:
        inputs.push_back(ag::as_strided(base, {2, 2}, {pick(3) + 1, pick(5) + 1}, pick(8)));
        break;
      default:
        inputs.push_back(base.detach().slice(1, pick(2), 4));
        break;  // no common _base
    }
  }
  return inputs;
}

// Every element offset `t` touches in its storage.
std::set<int64_t> elements(const Tensor& t) {
  std::set<int64_t> out;
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = t.storage_offset();
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[static_cast<size_t>(d)] * t.stride(d);
    out.insert(off);
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[static_cast<size_t>(d)] < t.size(d)) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

// The reference plan: every pair compared, element sets intersected (the inputs are small).
InputPlan plan_inputs_pairwise(const std::vector<Tensor>& inputs, const std::string& fn_name) {
  size_t n = inputs.size();
  ag::aot::InputAliasing a;
  a.duplicate_of.assign(n, -1);
  a.group.resize(n);
  for (size_t i = 0; i < n; ++i) a.group[i] = i;
  auto find = [&](size_t i) {
    while (a.group[i] != i) i = a.group[i];
    return i;
  };
  for (size_t j = 0; j < n; ++j)
    for (size_t i = 0; i < j; ++i) {
      if (a.duplicate_of[i] >= 0) continue;
      if (inputs[i].is_same(inputs[j])) {
        a.duplicate_of[j] = static_cast<int64_t>(i);
        break;
      }
      if (inputs[i].storage() != inputs[j].storage()) continue;
      std::set<int64_t> ei = elements(inputs[i]), ej = elements(inputs[j]);
      bool shared = std::any_of(ei.begin(), ei.end(), [&](int64_t e) { return ej.count(e) > 0; });
      if (shared) a.group[find(j)] = find(i);
    }
  for (size_t i = 0; i < n; ++i) a.group[i] = find(i);
  return ag::aot::plan_from_aliasing(inputs, a, fn_name);
}

}  // namespace

TEST(CallOverhead, BucketedPlanEqualsPairwisePlan) {
  std::mt19937 rng(1234);
  size_t nontrivial = 0, duplicates = 0;
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<Tensor> inputs = random_inputs(rng);
    if (rng() % 4 == 0) inputs.back().requires_grad_();  // makes some plans unsupported
    std::string fast_error, slow_error;
    InputPlan fast, slow;
    try {
      fast = ag::aot::plan_inputs(inputs, "fn");
    } catch (const ag::trace::UnsupportedError& e) {
      fast_error = e.what();
    }
    try {
      slow = plan_inputs_pairwise(inputs, "fn");
    } catch (const ag::trace::UnsupportedError& e) {
      slow_error = e.what();
    }
    ASSERT_EQ(fast_error, slow_error) << "trial " << trial;
    ASSERT_TRUE(fast == slow) << "trial " << trial << "\nbucketed:\n"
                              << fast.to_string() << "pairwise:\n"
                              << slow.to_string();
    nontrivial += !fast.trivial();
    for (const InputPlan::Entry& e : fast.inputs)
      duplicates += e.kind == InputPlan::Kind::duplicate;
  }
  // The generator must reach the interesting structures, or the test proves nothing.
  EXPECT_GT(nontrivial, 200u);
  EXPECT_GT(duplicates, 200u);
}

TEST(CallOverhead, DistinctStoragesGiveTheTrivialPlan) {
  std::vector<Tensor> inputs;
  for (int i = 0; i < 300; ++i) inputs.push_back(ag::zeros({2}));
  InputPlan plan = ag::aot::plan_inputs(inputs, "fn");
  EXPECT_TRUE(plan.trivial());
  EXPECT_TRUE(plan == plan_inputs_pairwise(inputs, "fn"));
  inputs.push_back(inputs[7]);
  inputs.push_back(inputs[3].slice(0, 1, 2));
  inputs.push_back(inputs[3].slice(0, 0, 2));
  plan = ag::aot::plan_inputs(inputs, "fn");
  EXPECT_EQ(plan.inputs[300].kind, InputPlan::Kind::duplicate);
  EXPECT_EQ(plan.inputs[300].index, 7u);
  EXPECT_EQ(plan.bases.size(), 1u);
  EXPECT_EQ(plan.bases[0].members, (std::vector<size_t>{3, 301, 302}));
  EXPECT_TRUE(plan == plan_inputs_pairwise(inputs, "fn"));
}

TEST(CallOverhead, OverlappingInputsWithoutCommonBaseArePlainUnlessMutated) {
  Tensor base = ag::zeros({6});
  Tensor x = base.slice(0, 0, 4).detach().requires_grad_();
  Tensor y = base.slice(0, 2, 6).detach().requires_grad_();
  InputPlan plan = ag::aot::plan_inputs({x, y}, "fn");
  EXPECT_TRUE(plan.trivial());
  ASSERT_EQ(plan.unmergeable.size(), 1u);
  EXPECT_EQ(plan.unmergeable[0].members, (std::vector<size_t>{0, 1}));
  auto read_only = ag::aot_function([](const Tensor& a, const Tensor& b) { return (a * b).sum(); });
  EXPECT_NO_THROW(read_only(x, y).backward());
  auto mutating = ag::aot_function([](Tensor a, const Tensor& b) {
    {
      ag::NoGradGuard no_grad;
      a.add_(1.0);
    }
    return (a * b).sum();
  });
  EXPECT_THROW(mutating(x, y), ag::trace::UnsupportedError);
}
