// Functionalization and the runtime wrappers: mutations, views and aliasing behave as in eager.
#include <gtest/gtest.h>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::test_input;

namespace {

Tensor copy_of(const Tensor& t, bool requires_grad) {
  ag::NoGradGuard no_grad;
  Tensor c = t.clone();
  if (requires_grad) c.requires_grad_();
  return c;
}

}  // namespace

TEST(Functionalization, MutationThroughViewOfIntermediate) {
  auto fn = [](const Tensor& x) {
    Tensor y = x * 2.0;
    Tensor row = y.select(0, 1);
    row.mul_(3.0);
    return y.sum(std::vector<int64_t>{1});
  };
  Tensor x = test_input({3, 4});
  Tensor x2 = copy_of(x, true);
  auto f = ag::aot_function(fn);
  Tensor out = f(x);
  Tensor ref = fn(x2);
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  out.sum().backward();
  ref.sum().backward();
  EXPECT_TRUE(allclose(x.grad(), x2.grad(), 1e-12, 1e-12));
  EXPECT_NE(f.graphs().forward.find("select_scatter"), std::string::npos) << f.graphs().forward;
}

TEST(Functionalization, OutputsAliasingEachOther) {
  auto fn = [](const Tensor& x) {
    Tensor y = x.exp();
    return std::make_tuple(y.t(), y.select(0, 0));
  };
  Tensor x = test_input({2, 3});
  auto f = ag::aot_function(fn);
  auto [a, b] = f(x);
  EXPECT_TRUE(a.storage() == b.storage());
  Tensor x2 = copy_of(x, true);
  auto [ra, rb] = fn(x2);
  EXPECT_TRUE(allclose(a, ra, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(b, rb, 1e-12, 1e-12));
  (a.sum() + b.sum() * 2.0).backward();
  (ra.sum() + rb.sum() * 2.0).backward();
  EXPECT_TRUE(allclose(x.grad(), x2.grad(), 1e-12, 1e-12));
  EXPECT_NE(f.graphs().meta.find("alias_of_intermediate"), std::string::npos) << f.graphs().meta;
}

TEST(Functionalization, DuplicateInputs) {
  auto fn = [](Tensor a, Tensor b) {
    a.add_(1.0);
    return (a * b).sum();
  };
  Tensor x = test_input({3}, -1, 1, 1, false);
  Tensor x2 = copy_of(x, false);
  auto f = ag::aot_function(fn);
  Tensor out = f(x, x);
  Tensor ref = fn(x2, x2);
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(x, x2, 0, 0));
}

TEST(Functionalization, OverlappingInputsOneMutated) {
  auto fn = [](Tensor a, const Tensor& b) {
    a.mul_(2.0);
    return b.sum();
  };
  Tensor base = test_input({4, 3}, -1, 1, 1, false);
  Tensor base2 = copy_of(base, false);
  auto f = ag::aot_function(fn);
  Tensor out = f(base.slice(0, 0, 3), base.slice(0, 1, 4));
  Tensor ref = fn(base2.slice(0, 0, 3), base2.slice(0, 1, 4));
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(base, base2, 0, 0));
}

TEST(Functionalization, NonOverlappingViewsAreNotAliased) {
  auto fn = [](Tensor a, const Tensor& b) {
    a.mul_(2.0);
    return b.sum();
  };
  Tensor base = test_input({4, 3}, -1, 1, 1, false);
  Tensor base2 = copy_of(base, false);
  auto f = ag::aot_function(fn);
  Tensor out = f(base.select(1, 0), base.select(1, 1));
  Tensor ref = fn(base2.select(1, 0), base2.select(1, 1));
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(base, base2, 0, 0));
  EXPECT_EQ(f.graphs().inference.find("synthetic_base"), std::string::npos) << f.graphs().inference;
}

TEST(Functionalization, RunningStatsUnderNoGrad) {
  auto fn = [](const Tensor& x, Tensor running) {
    Tensor m = x.mean(std::vector<int64_t>{0});
    {
      ag::NoGradGuard no_grad;
      running.mul_(0.9).add_(m.detach() * 0.1);
    }
    return (x - m).pow(2).sum();
  };
  Tensor x = test_input({5, 3}), r = test_input({3}, 0, 1, 2, false);
  Tensor x2 = copy_of(x, true), r2 = copy_of(r, false);
  auto f = ag::aot_function(fn);
  Tensor out = f(x, r);
  Tensor ref = fn(x2, r2);
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(r, r2, 1e-12, 1e-12));
  out.backward();
  ref.backward();
  EXPECT_TRUE(allclose(x.grad(), x2.grad(), 1e-12, 1e-12));
}

TEST(Functionalization, MutationOfNonLeafInputThatRequiresGrad) {
  auto fn = [](Tensor a) {
    a.mul_(3.0);
    return a.sin().sum();
  };
  Tensor leaf = test_input({4});
  Tensor leaf2 = copy_of(leaf, true);
  Tensor a = leaf * 2.0, a2 = leaf2 * 2.0;
  auto f = ag::aot_function(fn);
  Tensor out = f(a);
  Tensor ref = fn(a2);
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(a, a2, 1e-12, 1e-12));
  EXPECT_FALSE(a.is_leaf());
  (out + a.sum()).backward();
  (ref + a2.sum()).backward();
  EXPECT_TRUE(allclose(leaf.grad(), leaf2.grad(), 1e-12, 1e-12));
}

TEST(Functionalization, MutationOfLeafRequiringGradRaisesLikeEager) {
  auto fn = [](Tensor a) {
    a.mul_(3.0);
    return a.sum();
  };
  auto f = ag::aot_function(fn);
  EXPECT_THROW(f(test_input({3})), std::runtime_error);
  EXPECT_THROW(fn(test_input({3})), std::runtime_error);
}

TEST(Functionalization, MutationThroughDetachIsHiddenFromAutograd) {
  auto fn = [](const Tensor& a) {
    Tensor d = a.detach();
    d.mul_(2.0);
    return (a * a).sum();
  };
  Tensor a = test_input({3}), a2 = copy_of(a, true);
  auto f = ag::aot_function(fn);
  Tensor out = f(a);
  Tensor ref = fn(a2);
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(a, a2, 0, 0));
  out.backward();
  ref.backward();
  EXPECT_TRUE(allclose(a.grad(), a2.grad(), 1e-12, 1e-12));
}

TEST(Functionalization, ViewOfInputAfterMutation) {
  auto fn = [](Tensor a) {
    a.add_(1.0);
    return a.slice(0, 1, 3);
  };
  Tensor a = test_input({4}, -1, 1, 1, false), a2 = copy_of(a, false);
  auto f = ag::aot_function(fn);
  Tensor out = f(a);
  Tensor ref = fn(a2);
  EXPECT_TRUE(allclose(out, ref, 0, 0));
  EXPECT_TRUE(out._base().is_same(a));
  out.mul_(10.0);  // writes through to the caller's tensor, as in eager
  ref.mul_(10.0);
  EXPECT_TRUE(allclose(a, a2, 0, 0));
}

TEST(Functionalization, KeepInferenceInputMutations) {
  auto fn = [](Tensor a) {
    a.mul_(2.0);
    return a.sum();
  };
  ag::AotConfig cfg;
  cfg.keep_inference_input_mutations = true;
  auto f = ag::aot_function(fn, cfg);
  Tensor a = test_input({3}, -1, 1, 1, false), a2 = copy_of(a, false);
  Tensor out = f(a);
  fn(a2);
  EXPECT_TRUE(allclose(a, a2, 0, 0));
  EXPECT_NE(f.graphs().inference.find("aten.copy_.default"), std::string::npos) << f.graphs().inference;
  EXPECT_TRUE(allclose(out, a2.sum(), 1e-12, 1e-12));
}

TEST(Functionalization, SavedValueMutatedInsideFunctionErrorsAtBackward) {
  auto fn = [](const Tensor& a) {
    Tensor y = a.exp();
    Tensor z = y.sum();
    y.mul_(2.0);
    return z;
  };
  Tensor a = test_input({3}), a2 = copy_of(a, true);
  auto f = ag::aot_function(fn);
  Tensor out = f(a);
  Tensor ref = fn(a2);
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_THROW(ref.backward(), std::runtime_error);
  EXPECT_THROW(out.backward(), std::runtime_error);
}

TEST(Functionalization, RecompilesWhenAliasingChangesAndLogsWhy) {
  auto fn = [](Tensor a, const Tensor& b) {
    a.add_(1.0);
    return (a * b).sum();
  };
  auto f = ag::aot_function(fn);
  Tensor x = test_input({3}, -1, 1, 1, false), y = test_input({3}, -1, 1, 2, false);
  f(x, y);
  EXPECT_EQ(f.num_compilations(), 1u);
  setenv("AOTGRAD_LOG", "recompiles", 1);
  ::testing::internal::CaptureStderr();
  Tensor x2 = copy_of(x, false);
  Tensor ref = fn(x2, x2);
  Tensor out = f(x, x);  // now the two inputs are one tensor
  std::string log = ::testing::internal::GetCapturedStderr();
  unsetenv("AOTGRAD_LOG");
  EXPECT_EQ(f.num_compilations(), 2u);
  EXPECT_NE(log.find("inputs repeat or alias differently"), std::string::npos) << log;
  EXPECT_TRUE(allclose(out, ref, 1e-12, 1e-12));
  EXPECT_TRUE(allclose(x, x2, 0, 0));
  f(x, y);  // the first specialization is reused
  EXPECT_EQ(f.num_compilations(), 2u);
}
