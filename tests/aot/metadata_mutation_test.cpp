// Metadata-mutating in-place ops (t_, transpose_, unsqueeze_, squeeze_, as_strided_): eager
// behaviour as PyTorch, and aot_function applying the new geometry to the caller's tensors.
#include <gtest/gtest.h>

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>

#include "aot/eager_oracle.h"
#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"
#include "trace/functionalize.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::contains;
using ag::testing::expect_like_eager;
using ag::testing::OracleSetup;
using ag::testing::test_input;

namespace {

Tensor plain(const ag::IntList& sizes, uint64_t seed = 1) {
  return test_input(sizes, -1, 1, seed, /*requires_grad=*/false);
}

// A non-leaf input that requires grad, and the leaf it comes from.
OracleSetup non_leaf(const ag::IntList& sizes) {
  Tensor leaf = test_input(sizes);
  return {{leaf * 2.0}, {leaf}};
}

// `call` is refused in one line (trace::UnsupportedError) holding each of `parts`.
void expect_refused(const std::function<void()>& call, std::initializer_list<const char*> parts) {
  try {
    call();
    ADD_FAILURE() << "not refused";
  } catch (const ag::trace::UnsupportedError& e) {
    const std::string what = e.what();
    for (const char* part : parts) EXPECT_TRUE(contains(what, part)) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

// The backward of `out`'s sum raises an error holding `expected`.
void expect_backward_raises(const Tensor& out, const std::string& expected) {
  try {
    out.sum().backward();
    ADD_FAILURE() << "backward did not raise";
  } catch (const std::exception& x) {
    EXPECT_TRUE(contains(x.what(), expected)) << x.what();
  }
}

}  // namespace

// ---- eager ----

TEST(MetadataMutationEager, EveryHandleSeesTheNewGeometryAndTheVersionMoves) {
  Tensor x = plain({2, 3});
  Tensor alias = x;
  uint64_t v0 = x.version();
  std::vector<double> before = x.to_vector<double>();
  ag::transpose_(x, 0, 1);
  EXPECT_EQ(alias.sizes(), (ag::IntList{3, 2}));
  EXPECT_EQ(alias.strides(), (ag::IntList{1, 3}));
  EXPECT_EQ(x.version(), v0 + 1);
  EXPECT_TRUE(allclose(x, ag::transpose(ag::from_vector(before, {2, 3}), 0, 1), 0, 0));
  ag::unsqueeze_(x, 0);
  EXPECT_EQ(x.sizes(), (ag::IntList{1, 3, 2}));
  ag::squeeze_(x, 0);
  ag::squeeze_(x, 1);  // size 2: geometry unchanged, version still bumped (as PyTorch)
  EXPECT_EQ(x.sizes(), (ag::IntList{3, 2}));
  EXPECT_EQ(x.version(), v0 + 4);
  ag::t_(x);
  EXPECT_EQ(x.sizes(), (ag::IntList{2, 3}));
  ag::as_strided_(x, {3, 2}, {1, 3});
  EXPECT_EQ(x.strides(), (ag::IntList{1, 3}));
  EXPECT_EQ(x.storage_offset(), 0);
}

TEST(MetadataMutationEager, ErrorsAsPyTorch) {
  Tensor leaf = test_input({2, 3});
  EXPECT_THROW(ag::t_(leaf), std::runtime_error);  // a leaf that requires grad
  Tensor view = leaf.slice(0, 0, 1);
  EXPECT_THROW(ag::t_(view), std::runtime_error);  // a view of one
  {
    ag::NoGradGuard no_grad;
    ag::t_(leaf);  // allowed under no_grad
  }
  EXPECT_EQ(leaf.sizes(), (ag::IntList{3, 2}));
  EXPECT_TRUE(leaf.is_leaf());
  Tensor d = leaf.detach();
  ag::t_(d);  // a detached alias has its own geometry
  EXPECT_EQ(leaf.sizes(), (ag::IntList{3, 2}));
  Tensor c = plain({2, 3, 4});
  EXPECT_THROW(ag::t_(c), std::invalid_argument);
  EXPECT_THROW(ag::transpose_(c, 0, 5), std::invalid_argument);
  EXPECT_THROW(ag::squeeze_(c, 3), std::invalid_argument);
  EXPECT_THROW(ag::unsqueeze_(c, 5), std::invalid_argument);
  EXPECT_THROW(ag::as_strided_(c, {100}, {1}), std::invalid_argument);
  EXPECT_EQ(c.sizes(), (ag::IntList{2, 3, 4}));  // a refused call changes nothing
}

TEST(MetadataMutationEager, ALeafsAccumulatorFitsTheGradientToTheSizesItWasMadeIn) {
  // PyTorch's AccumulateGrad records its leaf's metadata when made, and the engine checks each
  // gradient against it: made before a change of sizes under no_grad, it refuses the gradient of
  // the new sizes; made after, it takes it.
  Tensor y = plain({3, 2});
  Tensor w = test_input({2, 3});
  Tensor before = w * 2.0;
  {
    ag::NoGradGuard no_grad;
    ag::t_(w);
  }
  try {
    (w * y).sum().backward();
    ADD_FAILURE() << "backward did not raise";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "Function MulBackward0 returned an invalid gradient at index 0 - got [3, 2] but "
              "expected shape compatible with [2, 3]");
  }
  before = Tensor();  // the accumulator dies with the graph holding it
  (w * y).sum().backward();
  EXPECT_EQ(w.grad().sizes(), (ag::IntList{3, 2}));
  EXPECT_TRUE(allclose(w.grad(), y, 0, 0));
}

TEST(MetadataMutationEager, NonLeafGetsTheViewBackward) {
  // PyTorch: x.t_() on a non-leaf gives TBackward; squeeze_ and as_strided_ need the geometry
  // from before the call in their backward.
  Tensor leaf = test_input({2, 3, 1});
  Tensor x = leaf * 2.0;
  ag::squeeze_(x, -1);
  ag::t_(x);
  ag::as_strided_(x, {2, 3}, {1, 2});
  ASSERT_TRUE(x.grad_fn());
  (x * ag::arange(6.0).to(ag::DType::f64).view({2, 3})).sum().backward();
  // x[i][j] reads storage element i + 2j, i.e. leaf[(i + 2j) / 3][(i + 2j) % 3].
  std::vector<double> expected(6, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j) expected[i + 2 * j] += 2.0 * (3 * i + j);
  EXPECT_TRUE(allclose(leaf.grad(), ag::from_vector(expected, {2, 3, 1}), 1e-12, 0));
}

TEST(MetadataMutationEager, ViewKeepsItsBaseAndTheBaseKeepsItsHistory) {
  Tensor leaf = test_input({2, 3});
  Tensor x = leaf * 2.0;
  Tensor y = x.slice(0, 0, 1);
  auto x_fn = x.grad_fn();
  ag::t_(y);
  EXPECT_EQ(y.sizes(), (ag::IntList{3, 1}));
  EXPECT_TRUE(y._base().is_same(x));
  EXPECT_EQ(x.grad_fn(), x_fn);  // no CopySlices: the data did not change
  (y * 3.0).sum().backward();
  EXPECT_TRUE(
      allclose(leaf.grad(), ag::from_vector(std::vector<double>{6, 6, 6, 0, 0, 0}, {2, 3}), 0, 0));
}

// ---- aot_function ----

TEST(MetadataMutation, TransposeOfInputInference) {
  auto g = expect_like_eager(
      [] {
        return OracleSetup{{plain({2, 3})}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::transpose_(a[0], 0, 1);
        return std::vector<Tensor>{a[0] * 2.0};
      });
  EXPECT_TRUE(contains(g.meta, "mutates_metadata=1")) << g.meta;
  EXPECT_TRUE(contains(g.meta, "metadata mutation of user input 0: sizes [3, 2] strides [1, 3]"))
      << g.meta;
  EXPECT_FALSE(contains(g.inference, "copy_")) << g.inference;
}

TEST(MetadataMutation, TOfNonLeafInputTraining) {
  auto g = expect_like_eager(
      [] {
        return non_leaf({2, 3});
      },
      [](std::vector<Tensor> a) {
        ag::t_(a[0]);
        return std::vector<Tensor>{a[0].sin() * ag::arange(6.0).to(ag::DType::f64).view({3, 2})};
      });
  EXPECT_TRUE(contains(g.meta, "(seen by autograd)")) << g.meta;
  EXPECT_TRUE(contains(g.meta, "mutated inputs: 0")) << g.meta;
}

TEST(MetadataMutation, MutatedInputReturnedIsTheInput) {
  expect_like_eager(
      [] {
        return OracleSetup{{plain({3, 4}), plain({4}, 2)}};
      },
      [](std::vector<Tensor> a) {
        ag::unsqueeze_(a[0], 0);
        ag::squeeze_(a[1], 0);  // size 4: no change, not a mutation
        return std::vector<Tensor>{a[0], a[1]};
      });
  expect_like_eager(
      [] {
        return non_leaf({3, 1});
      },
      [](std::vector<Tensor> a) {
        ag::squeeze_(a[0], 1);
        return std::vector<Tensor>{a[0]};
      });
}

TEST(MetadataMutation, AsStridedOfInput) {
  auto g = expect_like_eager(
      [] {
        return OracleSetup{{plain({2, 3})}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::as_strided_(a[0], {2, 2}, {1, 2}, 1);
        return std::vector<Tensor>{a[0].sum()};
      });
  EXPECT_TRUE(contains(g.meta, "storage_offset 1")) << g.meta;
  expect_like_eager(
      [] {
        return non_leaf({2, 3});
      },
      [](std::vector<Tensor> a) {
        ag::as_strided_(a[0], {3, 2}, {1, 3}, 0);
        return std::vector<Tensor>{a[0] * a[0]};
      });
}

TEST(MetadataMutation, CancellingChangesAreNotMutations) {
  auto g = expect_like_eager(
      [] {
        return OracleSetup{{plain({2, 3})}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::t_(a[0]);
        ag::t_(a[0]);
        return std::vector<Tensor>{a[0] + 1.0};
      });
  EXPECT_TRUE(contains(g.meta, "mutates_metadata=0")) << g.meta;
  EXPECT_FALSE(contains(g.meta, "metadata mutation of")) << g.meta;
}

TEST(MetadataMutation, MetadataThenDataMutation) {
  auto g = expect_like_eager(
      [] {
        return OracleSetup{{plain({2, 3})}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::t_(a[0]);
        a[0].select(0, 1).mul_(3.0);  // row 1 of the transposed view
        return std::vector<Tensor>{a[0] * 1.0};
      });
  EXPECT_TRUE(contains(g.meta, "mutates_data=1 mutates_metadata=1")) << g.meta;
  EXPECT_TRUE(contains(g.inference, "select_scatter")) << g.inference;
  expect_like_eager(
      [] {
        return non_leaf({2, 3});
      },
      [](std::vector<Tensor> a) {
        ag::transpose_(a[0], 0, 1);
        a[0].add_(1.0);
        return std::vector<Tensor>{a[0].exp()};
      });
}

TEST(MetadataMutation, DataThenMetadataMutationAndViewOutputs) {
  expect_like_eager(
      [] {
        return non_leaf({2, 3});
      },
      [](std::vector<Tensor> a) {
        a[0].mul_(2.0);
        Tensor before = a[0].slice(1, 0, 2);  // a view made before t_
        ag::t_(a[0]);
        Tensor after = a[0].select(0, 2);  // and one after
        return std::vector<Tensor>{before, after, a[0].sum()};
      });
}

TEST(MetadataMutation, UnderNoGradOfLeafThatRequiresGrad) {
  // Allowed under no_grad; the leaf keeps requires_grad and the new geometry reaches the caller.
  auto make = [] {
    Tensor leaf = test_input({2, 3});
    return OracleSetup{{leaf, plain({3, 2}, 3)}, {leaf}};
  };
  expect_like_eager(make, [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(a[0]);
    }
    return std::vector<Tensor>{a[1] * 2.0};
  });
}

TEST(MetadataMutation, IntermediatesAndDuplicates) {
  expect_like_eager(
      [] {
        return non_leaf({2, 3});
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0] * 3.0;
        Tensor v = y.slice(0, 0, 1);
        ag::t_(y);
        return std::vector<Tensor>{y, v};
      });
  expect_like_eager(
      [] {
        Tensor x = plain({2, 3});
        return OracleSetup{{x, x}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::t_(a[0]);  // a[1] is the same tensor: it sees the change too
        return std::vector<Tensor>{a[1] + 1.0};
      });
}

TEST(MetadataMutation, MemberOfSyntheticBase) {
  // Two overlapping views of one base; one has its geometry changed, the other its data.
  expect_like_eager(
      [] {
        Tensor base = plain({4, 3});
        return OracleSetup{{base.slice(0, 0, 3), base.slice(0, 1, 4)}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::t_(a[0]);
        a[1].add_(1.0);
        return std::vector<Tensor>{a[0] * 1.0};
      });
}

TEST(MetadataMutation, LeafRequiringGradRaisesLikeEager) {
  auto fn = [](Tensor a) {
    ag::t_(a);
    return a.sum();
  };
  auto f = ag::aot_function(fn);
  EXPECT_THROW(fn(test_input({2, 3})), std::runtime_error);
  EXPECT_THROW(f(test_input({2, 3})), std::runtime_error);
  auto g = ag::aot_function([](Tensor a) { return ag::t_(a).sum(); });
  EXPECT_THROW(g(plain({2, 3, 4})), std::invalid_argument);
}

TEST(MetadataMutation, LeafSizesChangedUnderNoGradThenUsedWithGradTakesTheNewSizesGradient) {
  // Refused before. PyTorch 1.13: w = leaf (2, 3); with no_grad: w.t_(); (w * y).sum().backward()
  // gives w.grad == y, laid out as the transposed leaf: its AccumulateGrad, made at the use,
  // recorded [3, 2]. The graph passes the gradient as it is (geometry_update, fit=False) and the
  // runtime makes the accumulator in those sizes.
  auto fn = [](Tensor w, const Tensor& y) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(w);
    }
    return (w * y).sum();
  };
  Tensor y = ag::arange(6.0).to(ag::DType::f64).view({3, 2});
  auto f = ag::aot_function(fn);
  for (int call = 0; call < 2; ++call) {
    Tensor w = test_input({2, 3});
    f(w, y).backward();
    EXPECT_EQ(w.grad().sizes(), (ag::IntList{3, 2}));
    EXPECT_EQ(w.grad().strides(), (ag::IntList{1, 3}));  // the leaf's layout
    EXPECT_TRUE(allclose(w.grad(), y, 0, 0)) << w.grad();
  }
  // Sizes that grow, shrink, or change through as_strided_, read through views and with other
  // inputs, and written under no_grad too (the graph gets a clone, the gradient the leaf's
  // accumulator all the same).
  auto leaf_and = [](ag::IntList sizes, ag::IntList other) {
    return [=] {
      Tensor leaf = test_input(sizes);
      return OracleSetup{{leaf, plain(other, 8)}, {leaf}};
    };
  };
  expect_like_eager(leaf_and({2, 3}, {2, 3}), [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(a[0], 0);
    }
    return std::vector<Tensor>{a[0].exp() * a[1], a[0].select(0, 0).sum(1)};
  });
  expect_like_eager(leaf_and({2, 1, 3}, {2, 3}), [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::squeeze_(a[0], 1);
    }
    return std::vector<Tensor>{a[0] * a[1]};
  });
  expect_like_eager(leaf_and({4, 3}, {2, 3}), [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::as_strided_(a[0], {2, 3}, {3, 1}, 3);
    }
    return std::vector<Tensor>{a[0].tanh() * a[1]};
  });
  expect_like_eager(leaf_and({2, 3}, {3, 2}), [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(a[0]);
      a[0].mul_(3.0);
    }
    return std::vector<Tensor>{a[0] * a[1], a[0].slice(0, 1, 3)};
  });
  expect_like_eager(leaf_and({2, 3}, {3, 2}), [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(a[0]);
    }
    Tensor out = a[0] * 2.0 + a[1];  // saves nothing the write changes
    {
      ag::NoGradGuard no_grad;
      a[0].zero_();
    }
    return std::vector<Tensor>{out, a[0]};
  });
}

TEST(MetadataMutation, LeafAccumulatorMadeBeforeASizesChangeFitsTheGradientAsEager) {
  // The engine fits a leaf's gradient to the sizes its AccumulateGrad recorded when made. Made
  // before the call (by a graph still alive), it has the caller's sizes: the gradient of the
  // transposed leaf is refused in backward, eager and compiled alike, with PyTorch's message.
  auto fn = [](Tensor w, const Tensor& y) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(w);
    }
    return w * y;
  };
  Tensor y = plain({3, 2});
  auto f = ag::aot_function(fn);
  for (bool compiled : {false, true}) {
    SCOPED_TRACE(compiled ? "compiled" : "eager");
    Tensor w = test_input({2, 3});
    Tensor before = w * 2.0;  // its node holds the accumulator, made in [2, 3]
    Tensor out = compiled ? f(w, y) : fn(w, y);
    expect_backward_raises(out,
                           "invalid gradient at index 0 - got [3, 2] but expected shape "
                           "compatible with [2, 3]");
  }
  // Where the old sizes broadcast to the new ones, the gradient is summed to them, then laid
  // into the leaf's new sizes: the same in both.
  auto g = [](Tensor w, const Tensor& y) {
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(w, 0);
    }
    return (w * y).sum();
  };
  auto fg = ag::aot_function(g);
  Tensor ys = plain({2, 3});
  Tensor we = test_input({3}), wc = test_input({3});
  Tensor be = we * 1.0, bc = wc * 1.0;
  g(we, ys).backward();
  fg(wc, ys).backward();
  ASSERT_TRUE(we.grad().defined());
  ASSERT_TRUE(wc.grad().defined());
  EXPECT_EQ(wc.grad().sizes(), we.grad().sizes());
  EXPECT_TRUE(allclose(wc.grad(), we.grad(), 1e-12, 1e-12)) << wc.grad() << we.grad();
}

TEST(MetadataMutation, LeafSizesChangedUnderNoGradAndBackAroundAUseWithGradAsEager) {
  // AotProgramFuzz, seed 2923634 (refused until the graph passed a leaf its gradient as it is):
  // a [3, 4] leaf transposed under no_grad, used with grad, then transposed back. Eager's
  // AccumulateGrad, made at the use, takes a [4, 3] gradient, which grad() returns and backward()
  // cannot lay into the [3, 4] leaf: the compiled function does both the same.
  auto fn = [](Tensor w, const Tensor& y) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(w);
    }
    Tensor out = (w.unsqueeze(2) * y).sum();
    {
      ag::NoGradGuard no_grad;
      ag::t_(w);
    }
    return out;
  };
  Tensor y = test_input({4, 3, 2}, -1, 1, 2, false);
  auto f = ag::aot_function(fn);
  Tensor eager = test_input({3, 4}), compiled = test_input({3, 4});
  std::vector<Tensor> ge = ag::autograd::grad({fn(eager, y)}, {eager});
  std::vector<Tensor> gc = ag::autograd::grad({f(compiled, y)}, {compiled});
  EXPECT_EQ(ge[0].sizes(), (ag::IntList{4, 3}));  // the sizes of the use, not the leaf's
  EXPECT_EQ(gc[0].sizes(), (ag::IntList{4, 3}));
  EXPECT_TRUE(allclose(gc[0], ge[0], 1e-12, 1e-12));
  EXPECT_THROW(fn(eager, y).backward(), std::exception);
  EXPECT_THROW(f(compiled, y).backward(), std::exception);
  EXPECT_FALSE(eager.grad().defined());
  EXPECT_FALSE(compiled.grad().defined());
  // A square leaf keeps its sizes throughout: like eager.
  Tensor square = test_input({3, 3}), square_eager = test_input({3, 3});
  Tensor ys = test_input({3, 3, 2}, -1, 1, 3, false);
  fn(square_eager, ys).backward();
  f(square, ys).backward();
  EXPECT_TRUE(allclose(square.grad(), square_eager.grad(), 1e-12, 1e-12));
}

TEST(MetadataMutation, LeafViewedByAnotherInputTransposedUnderNoGradAsEager) {
  // AotProgramFuzz, seed 704161 (refused since then): a square leaf and a caller's view of it,
  // the leaf transposed under no_grad, the view read after. Eager regenerates the view's history
  // from the leaf in its new geometry; the graph does too since the leaf, a synthetic-base member
  // that is the view's _base, is treated as the root input.
  auto setup = [] {
    Tensor leaf = test_input({4, 4});
    return OracleSetup{{leaf, leaf.t().unsqueeze(2)}, {leaf}};
  };
  expect_like_eager(setup, [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::transpose_(a[0], 0, 1);
    }
    return std::vector<Tensor>{a[1].exp(), a[0] * a[0]};
  });
  // Its sizes changed and the view used after: refused, in one line (eager's backward through the
  // view raises there).
  auto fn = [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(a[0], 0);
    }
    return std::vector<Tensor>{a[1].exp()};
  };
  OracleSetup s = setup();
  expect_refused([&] { ag::aot_function(fn)(s.inputs); },
                 {"input 0 had its sizes changed in place under no_grad", "view is used after"});
}

TEST(MetadataMutation, LeafUsedWithGradInSeveralSizesIsRefused) {
  // Eager fits each use's gradient to the sizes of the accumulator (made at the first use)
  // before adding them; the joint graph adds them first: refused, in one line.
  auto fn = [](Tensor w, const Tensor& y) {
    Tensor first = (w * 2.0).sum();
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(w, 0);
    }
    return first + (w * y).sum();
  };
  Tensor y = plain({2, 3});
  Tensor eager = test_input({3});
  fn(eager, y).backward();
  EXPECT_EQ(eager.grad().sizes(), (ag::IntList{1, 3}));
  expect_refused([&] { ag::aot_function(fn)(test_input({3}), y); },
                 {"input 0 is a leaf that requires grad", "used with grad in several sizes"});
}

TEST(MetadataMutation, LeafGeometryChangedUnderNoGradKeepingItsSizesTakesTheGradientAsIs) {
  // PyTorch 1.13: x = leaf (3, 3); with no_grad: x.t_(); (x * y).sum().backward() gives
  // x.grad == y: the leaf's AccumulateGrad takes the new geometry's gradient as it is, whether it
  // was made before the change or after, since the sizes agree. aot_function refused it.
  auto fn = [](Tensor w, const Tensor& y) {
    Tensor before = w * 2.0;  // AccumulateGrad made before the change
    {
      ag::NoGradGuard no_grad;
      ag::t_(w);
    }
    return (w * y).sum() + before.sum();
  };
  Tensor y = ag::arange(9.0).to(ag::DType::f64).view({3, 3});
  Tensor x = test_input({3, 3});
  ag::aot_function(fn)(x, y).backward();
  EXPECT_EQ(x.strides(), (ag::IntList{1, 3}));
  EXPECT_TRUE(allclose(x.grad(), y + 2.0, 0, 0)) << x.grad();
  expect_like_eager(
      [] {
        Tensor leaf = test_input({2, 3, 3});
        return OracleSetup{{leaf, plain({2, 3, 3}, 8)}, {leaf}};
      },
      [](std::vector<Tensor> a) {
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(a[0], 2, 1);
        }
        return std::vector<Tensor>{a[0].exp() * a[1]};
      });
}

TEST(MetadataMutation, TransposedIntermediateReturnedIsNotAView) {
  // t_() keeps y its storage's own tensor: eager returns it without _base, and y.select(0, 0) as a
  // view of it.
  auto g = expect_like_eager(
      [] {
        return non_leaf({2, 3});
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0] * 3.0;  // (exp would save y: t_ then fails backward, in eager too)
        ag::t_(y);
        return std::vector<Tensor>{y, y.select(0, 0)};
      });
  EXPECT_TRUE(contains(g.meta, "output 0: non_alias")) << g.meta;
  EXPECT_TRUE(contains(g.meta, "output 1: alias_of_intermediate_base_is_user_output base=0"))
      << g.meta;
  auto f = ag::aot_function([](const Tensor& x) {
    Tensor y = x.exp();
    ag::t_(y);
    return std::make_tuple(y, y.select(0, 0));
  });
  auto [y, row] = f(test_input({2, 3}));
  EXPECT_FALSE(y.is_view());
  EXPECT_TRUE(row._base().is_same(y));
}

TEST(MetadataMutation, AsStridedOfOffsetInputAndMutation) {
  // as_strided's storage_offset is absolute, but a mutated input's new value starts at offset 0
  // inside the graph: the tracer rebases the window onto the input's own elements
  // (Tracer::rebased_as_strided), which it lies within here.
  expect_like_eager(
      [] {
        return OracleSetup{{plain({8}).slice(0, 2, 8)}, {}};
      },
      [](std::vector<Tensor> a) {
        ag::as_strided_(a[0], {2, 2}, {2, 1}, 3);
        a[0].add_(1.0);
        return std::vector<Tensor>{a[0] * 1.0};
      });
  expect_like_eager(
      [] {
        return OracleSetup{{plain({8}).slice(0, 2, 8)}, {}};
      },
      [](std::vector<Tensor> a) {
        Tensor y = ag::as_strided(a[0], {2, 2}, {1, 2}, 3);
        a[0].mul_(2.0);
        return std::vector<Tensor>{y * 1.0};
      });
  // A window that reaches past the input's elements, read after a write, reads an image of the
  // caller's storage (refused until Tracer::storage_image; where the input requires grad, it still
  // is: AsStridedWrite.ReadPastAnInputMadeBeforeAWriteAndUsedAfter).
  expect_like_eager(
      [] {
        return OracleSetup{{plain({8}).slice(0, 2, 8)}, {}};
      },
      [](std::vector<Tensor> a) {
        Tensor y = ag::as_strided(a[0], {2, 2}, {1, 2}, 1);
        a[0].mul_(2.0);
        return std::vector<Tensor>{y * 1.0};
      });
  // Offset 0 inputs are exact.
  expect_like_eager(
      [] {
        return OracleSetup{{plain({8})}, {}};
      },
      [](std::vector<Tensor> a) {
        Tensor y = ag::as_strided(a[0], {2, 2}, {1, 2}, 3);
        ag::as_strided_(a[0], {2, 3}, {3, 1}, 1);
        a[0].mul_(2.0);
        return std::vector<Tensor>{y * 1.0, a[0] * 1.0};
      });
}

TEST(MetadataMutation, NoGradViewMadeAfterAnotherInputWasTransposedUnderNoGrad) {
  // Found by AotProgramFuzz (seed 2692): the returned no_grad view is regenerated before the
  // runtime applies t_'s new geometry (and version bump) to the other input, so autograd then
  // took it for a view written since it was made and refused to use it.
  expect_like_eager(
      [] {
        Tensor l = test_input({6});
        return OracleSetup{{l, l.slice(0, 5, 6), l.unsqueeze(1)}, {l}};
      },
      [](std::vector<Tensor> a) {
        Tensor v;
        {
          ag::NoGradGuard no_grad;
          ag::t_(a[1]);
          v = a[2].permute({1, 0}).slice(1, 2, 4);
        }
        return std::vector<Tensor>{v};
      });
}

TEST(MetadataMutation, GeometryChangedUnderNoGradPassesTheGradientAsEager) {
  // Found by AotProgramFuzz (seeds 105659, 112645, 138178). Eager records nothing for t_ /
  // transpose_ / unsqueeze_ under no_grad: the gradient of the new geometry reaches the tensor's
  // node as it is (summed when the old shape broadcasts to the new), not mapped back through the
  // view, which the compiled backward did. PyTorch 1.13: x = leaf * 1; with no_grad: x.t_();
  // (x * w).sum().backward() gives leaf.grad == w, not w.t().
  Tensor leaf = test_input({3, 3});
  Tensor w = ag::arange(9.0).to(ag::DType::f64).view({3, 3});
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) {
    Tensor y = x * 1.0;
    {
      ag::NoGradGuard no_grad;
      ag::t_(y);
    }
    return (y * w).sum();
  });
  f(leaf, w).backward();
  EXPECT_TRUE(allclose(leaf.grad(), w, 0, 0)) << leaf.grad();

  expect_like_eager(
      [] {
        return non_leaf({2, 2});
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0].sum(1, true).expand({2, 2}) * 3.0;
        {
          ag::NoGradGuard no_grad;
          ag::t_(y);
        }
        return std::vector<Tensor>{y};
      });
  expect_like_eager(
      [] {
        return non_leaf({3, 3});
      },
      [](std::vector<Tensor> a) {
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(a[0], 0, 1);
        }
        return std::vector<Tensor>{a[0] * plain({3, 3}, 4)};
      });
  expect_like_eager([] { return non_leaf({3}); },
                    [](std::vector<Tensor> a) {
                      Tensor y = a[0] * 2.0;
                      {
                        ag::NoGradGuard no_grad;
                        ag::unsqueeze_(y, 0);
                      }
                      return std::vector<Tensor>{y * plain({2, 3}, 5)};
                    });
}

TEST(MetadataMutation, GeometryChangedUnderNoGradOfAnInputThatIsAViewInEager) {
  // Found by AotProgramFuzz (seeds 304718, 503244). Whether eager's tensor is a view decides its
  // gradient: a view's history is regenerated (its version moved) as an as_strided of its base
  // with the new geometry, so the gradient follows the elements; a tensor that is no view keeps
  // its node, which takes the gradient as it is. The fakes' view-ness follows the graph inputs
  // instead: a view passed alone is a graph input's root, a tensor passed with a view of it a
  // view of their synthetic base. PyTorch 1.13: v = (leaf * 1)[0:3] (square); with no_grad:
  // v.t_(); (v * w).sum().backward() gives leaf.grad[0:3] == w.t().
  Tensor leaf = test_input({4, 3});
  Tensor w = ag::arange(9.0).to(ag::DType::f64).view({3, 3});
  auto f = ag::aot_function([](Tensor v, const Tensor& w) {
    {
      ag::NoGradGuard no_grad;
      ag::t_(v);
    }
    return (v * w).sum();
  });
  Tensor v = (leaf * 1.0).slice(0, 0, 3);
  f(v, w).backward();
  EXPECT_TRUE(allclose(leaf.grad().slice(0, 0, 3), w.t(), 0, 0)) << leaf.grad();

  // A non-view passed with a view of it: its fake is a view of their synthetic base.
  expect_like_eager(
      [] {
        Tensor l = test_input({4, 4});
        Tensor r = l * 2.0;
        return OracleSetup{{r, r.t(), plain({4, 4}, 6)}, {l}};
      },
      [](std::vector<Tensor> a) {
        Tensor m = a[0].mean({1}, true);
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(a[0], 0, 1);
        }
        Tensor out = a[0].sub(m) * a[2];
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(a[0], 1, 0);
        }
        return std::vector<Tensor>{out, a[1] * 1.0};
      });
  // A view passed twice: a plain graph input, no view of anything in the graph.
  expect_like_eager(
      [] {
        Tensor l = test_input({5, 3});
        Tensor s = (l * 2.0).slice(0, 1, 4);
        return OracleSetup{{s, s, plain({3, 3}, 7)}, {l}};
      },
      [](std::vector<Tensor> a) {
        {
          ag::NoGradGuard no_grad;
          ag::t_(a[0]);
        }
        return std::vector<Tensor>{a[1] * a[2]};
      });
}

TEST(MetadataMutation, GeometryChangedTwiceUnderNoGradIsFittedOnceToTheNodesShape) {
  // Found by AotProgramFuzz (seed 704750): eager fits the gradient to the shape the tensor's node
  // was made for, once; the graph fitted it to each intermediate geometry in turn and raised
  // "invalid gradient ... got [3] but expected shape compatible with [1, 3]" at compile time.
  expect_like_eager([] { return non_leaf({3}); },
                    [](std::vector<Tensor> a) {
                      Tensor y = a[0] * 2.0;
                      {
                        ag::NoGradGuard no_grad;
                        ag::unsqueeze_(y, 0);
                        ag::squeeze_(y, 0);
                      }
                      return std::vector<Tensor>{y * plain({3}, 9)};
                    });
}

TEST(MetadataMutation, GeometryUpdateIsAViewOfTheNewGeometry) {
  // Found by AotProgramFuzz (seed 712225): aotgrad.geometry_update returns its second argument's
  // storage; not marked a view, common-subexpression elimination merged that value (a + a) with
  // an equal one written into the input (a.add_(a) under no_grad), so the returned tensor and the
  // input shared one buffer in the min-cut partition's forward. The program below is the seed's
  // body, which the oracle's single comparison does not catch by value (the fuzzer's repeated
  // calls do: the seed is replayed in AotProgramFuzz.SeedsFixedByGeometryUnderNoGrad).
  const ag::ops::OpDef& op = ag::ops::lookup("aotgrad.geometry_update.default");
  EXPECT_TRUE(op.is_view());
  EXPECT_EQ(op.view_of_arg(), 1);
  expect_like_eager(
      [] {
        Tensor leaf = test_input({5});
        return OracleSetup{{leaf}, {leaf}};
      },
      [](std::vector<Tensor> a) {
        Tensor s = a[0].squeeze(0);
        Tensor y = a[0].add(a[0]);
        {
          ag::NoGradGuard no_grad;
          a[0].add_(a[0]);
          ag::squeeze_(y, 0);
        }
        Tensor d = a[0].detach();
        return std::vector<Tensor>{d, d, y};
      });
}

TEST(MetadataMutation, ViewOfAGeometryChangedUnderNoGradReturnedTwiceTakesItsHistory) {
  // Found by AotProgramFuzz (seed 836425): a view made with grad on of a tensor whose geometry
  // changed under no_grad is a view of that tensor in eager, whose node takes the gradient of the
  // new geometry as it is. Returned twice, the view is regenerated at run time from the
  // storage's root through t, whose VJP mapped the gradient back to the old geometry instead.
  // PyTorch 1.13: v = cat([x[None], x[None]]); with no_grad: v.t_(); s = v[-1]; s returned
  // twice, (s * [10, 100]).sum() + (s * [1, 2]).sum() backward: x.grad == [11, 102].
  Tensor x = ag::from_vector(std::vector<double>{1, 2}, {2}).requires_grad_();
  auto f = ag::aot_function([](const Tensor& a) {
    Tensor v = ag::cat({a.unsqueeze(0), a.unsqueeze(0)}, 0);
    {
      ag::NoGradGuard no_grad;
      ag::t_(v);
    }
    Tensor s = v.select(0, -1);
    return std::make_tuple(s, s);
  });
  auto [s0, s1] = f(x);
  ((s0 * ag::from_vector(std::vector<double>{10, 100}, {2})).sum() +
   (s1 * ag::from_vector(std::vector<double>{1, 2}, {2})).sum())
      .backward();
  EXPECT_TRUE(allclose(x.grad(), ag::from_vector(std::vector<double>{11, 102}, {2}), 0, 0))
      << x.grad();
  expect_like_eager(
      [] {
        Tensor leaf = test_input({2});
        return OracleSetup{{leaf}, {leaf}};
      },
      [](std::vector<Tensor> a) {
        Tensor v = ag::cat({a[0].unsqueeze(0), a[0].unsqueeze(0)}, 0);
        {
          ag::NoGradGuard no_grad;
          ag::t_(v);
        }
        Tensor s = v.select(0, -1);
        return std::vector<Tensor>{s, s, a[0]};
      });
}

TEST(MetadataMutation, ViewMadeBeforeAGeometryChangedUnderNoGradIsRegeneratedFromIt) {
  // A view made before its base's geometry changed under no_grad: eager regenerates its history
  // (the version moved) as an as_strided of the base with the view's geometry, whose gradient
  // is laid out in the base's new geometry and reaches the base's node as it is. PyTorch 1.13:
  // y = x * 1; u = y[0]; with no_grad: y.t_(); (u * [1, 2, 3]).sum().backward() puts [1, 2, 3]
  // in column 0 of x.grad (the graph put it in row 0, through select's VJP).
  Tensor x = ag::zeros({3, 3}).to(ag::DType::f64).requires_grad_();
  auto f = ag::aot_function([](const Tensor& x) {
    Tensor y = x * 1.0;
    Tensor u = y.select(0, 0);
    {
      ag::NoGradGuard no_grad;
      ag::t_(y);
    }
    return (u * ag::from_vector(std::vector<double>{1, 2, 3}, {3})).sum();
  });
  f(x).backward();
  Tensor expected = ag::from_vector(std::vector<double>{1, 0, 0, 2, 0, 0, 3, 0, 0}, {3, 3});
  EXPECT_TRUE(allclose(x.grad(), expected, 0, 0)) << x.grad();
  expect_like_eager(
      [] {
        return non_leaf({3, 3});
      },
      [](std::vector<Tensor> a) {
        Tensor y = a[0] * 2.0;
        Tensor u = y.slice(0, 1, 3);
        {
          ag::NoGradGuard no_grad;
          ag::t_(y);
        }
        return std::vector<Tensor>{u * plain({2, 3}, 3), u, y};
      });
}

TEST(MetadataMutation, ViewOfANoGradViewMadeAfterTheGeometryChangedKeepsItsHistory) {
  // Found by AotProgramFuzz (seeds 803669, 822574, 812205, 800815). The runtime regenerates the
  // returned views of an input before it gives the caller's tensor its new geometry, whose
  // version bump then made their histories look stale: rebased as as_strided of the leaf, a
  // view with grad on of a view made under no_grad passed the leaf a gradient that eager's,
  // made after the bump, does not. PyTorch 1.13: a = leaf.unsqueeze(2); with no_grad:
  // a.transpose_(0, 2); v = a.as_strided((1, 3), (1, 1)); s = v.squeeze(0): s.sum().backward()
  // leaves leaf.grad None.
  Tensor leaf = ag::arange(12.0).to(ag::DType::f64).view({3, 4}).clone().requires_grad_();
  auto fn = [](std::vector<Tensor> a) {
    Tensor v;
    {
      ag::NoGradGuard no_grad;
      ag::transpose_(a[0], 0, 2);
      v = a[0].as_strided({1, 3}, {1, 1});
    }
    Tensor s = v.squeeze(0);
    return std::vector<Tensor>{s, s, a[0]};
  };
  auto f = ag::aot_function([&fn](const Tensor& a) {
    std::vector<Tensor> out = fn({a});
    return std::make_tuple(out[0], out[1]);
  });
  auto [s0, s1] = f(leaf.unsqueeze(2));
  (s0 * ag::from_vector(std::vector<double>{1, 10, 100}, {3})).sum().backward();
  EXPECT_FALSE(leaf.grad().defined()) << leaf.grad();
  expect_like_eager(
      [] {
        Tensor l = test_input({3, 4});
        return OracleSetup{{l.unsqueeze(2)}, {l}};
      },
      fn);
}

TEST(MetadataMutation, AsStridedOfAViewInputAfterItsGeometryChangedUnderNoGradReadsTheNewGeometry) {
  // Found by AotProgramFuzz (seed 913670). A view input, unsqueeze_ under no_grad, then an
  // as_strided of it reaching past its elements, returned. Eager made the output from the
  // caller's tensor in its new geometry: its history is the input's (regenerated from the base,
  // the version having moved) and then as_strided, whose gradient drops the elements outside
  // the input. The runtime replayed the whole chain from the old geometry, and the bump of the
  // geometry's replay made that history stale, rebuilt as as_strided of the base, which passed
  // those elements a gradient. PyTorch 1.13: l = zeros(2, 3, 3); a = l[:, :, 1:2]; with no_grad:
  // a.unsqueeze_(1); v = a.as_strided((2, 2), (2, 1)); (v * [[1, 2], [3, 4]]).sum().backward()
  // puts 1 and 4 at flat positions 1 and 4 of l.grad, nothing at 2 and 3.
  auto fn = [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(a[0], 1);
    }
    return std::vector<Tensor>{a[0].as_strided({2, 2}, {2, 1}), a[0]};
  };
  Tensor l = ag::zeros({2, 3, 3}).to(ag::DType::f64).requires_grad_();
  auto f = ag::aot_function([&fn](const Tensor& a) { return fn({a})[0]; });
  (f(l.slice(2, 1, 2)) * ag::from_vector(std::vector<double>{1, 2, 3, 4}, {2, 2})).sum().backward();
  std::vector<double> expected(18, 0.0);
  expected[1] = 1;
  expected[4] = 4;
  EXPECT_TRUE(allclose(l.grad(), ag::from_vector(expected, {2, 3, 3}), 0, 0)) << l.grad();
  expect_like_eager(
      [] {
        Tensor l = test_input({2, 6, 3});
        return OracleSetup{{l.slice(2, 1, 2)}, {l}};
      },
      fn);
  ag::testing::run_scenario(  // also through the artifact, serialized and read back
      [] {
        Tensor l = test_input({2, 6, 3});
        return ag::testing::ScenarioInputs{{l.slice(2, 1, 2)}, {l}};
      },
      [&fn](const ag::testing::TensorList& a) { return fn(a); });
  // An input that is no view keeps its node: the gradient of the new geometry reaches it as it
  // is, through the output's own view ops.
  expect_like_eager(
      [] {
        Tensor l = test_input({3, 3});
        return OracleSetup{{l * 2.0}, {l}};
      },
      [](std::vector<Tensor> a) {
        {
          ag::NoGradGuard no_grad;
          ag::t_(a[0]);
        }
        return std::vector<Tensor>{a[0].select(0, 1), a[0].as_strided({2, 2}, {1, 3}, 1)};
      });
}

TEST(MetadataMutation,
     NonLeafTransposedUnderNoGradThenWrittenWithGradOnTakesTheWriteInItsNewGeometry) {
  // AotProgramFuzz, seed 1017364. Eager records relu_ on the tensor in its new geometry: the
  // gradient of the new geometry goes through ReluBackward's mask as it is laid out, then to the
  // old node as it is. The runtime wrote the value back in the caller's old geometry and changed
  // the geometry after, so the write's node took the new layout's gradient as the old one's.
  for (bool square_write : {false, true})
    expect_like_eager(
        [] {
          return non_leaf({3, 3});
        },
        [square_write](std::vector<Tensor> a) {
          {
            ag::NoGradGuard no_grad;
            ag::transpose_(a[0], 0, 1);
          }
          if (square_write)
            a[0].mul_(a[0]);
          else
            ag::relu_(a[0]);
          return std::vector<Tensor>{a[0] * plain({3, 3}, 4)};
        });
  // A tensor that required no grad, changed under no_grad or not (eager records nothing either
  // way), then written with a value that requires grad.
  for (bool under_no_grad : {false, true})
    expect_like_eager(
        [] {
          Tensor w = test_input({3, 3}, -1, 1, 7);
          return OracleSetup{{plain({3, 3}, 6), w}, {w}};
        },
        [under_no_grad](std::vector<Tensor> a) {
          {
            std::optional<ag::NoGradGuard> no_grad;
            if (under_no_grad) no_grad.emplace();
            ag::t_(a[0]);
          }
          a[0].mul_(a[1]);
          ag::relu_(a[0]);
          return std::vector<Tensor>{a[0] * plain({3, 3}, 4)};
        });
  // The write before the change is recorded in the old geometry: the runtime's order is eager's.
  expect_like_eager(
      [] {
        return non_leaf({3, 3});
      },
      [](std::vector<Tensor> a) {
        a[0].mul_(plain({3, 3}, 5));  // saves no self: eager's backward runs
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(a[0], 0, 1);
        }
        return std::vector<Tensor>{a[0] * plain({3, 3}, 4)};
      });
}

TEST(MetadataMutation, NonLeafTransposedAndWrittenUnderNoGradThenWrittenWithGradOnTakesItAsIs) {
  // AotProgramFuzz, seed 1516068. After the write under no_grad the input's value was read again
  // from its root through a plain transpose, whose VJP turned the gradient back; eager's node
  // takes the new geometry's gradient as it is. With or without a squeeze_ with grad on first
  // (the runtime then replays the change with grad on), with or without the write.
  for (bool squeeze_first : {false, true})
    for (bool write_under_no_grad : {false, true})
      expect_like_eager(
          [] {
            return non_leaf({4, 4});
          },
          [=](std::vector<Tensor> a) {
            if (squeeze_first) ag::squeeze_(a[0], 0);  // size 4: no change, recorded
            {
              ag::NoGradGuard no_grad;
              ag::t_(a[0]);
              if (write_under_no_grad) a[0].select(1, 2).fill_(0.5);
            }
            ag::tanh_(a[0]);
            return std::vector<Tensor>{a[0] * plain({4, 4}, 4)};
          });
}

TEST(MetadataMutation, AsStridedPastAViewMadeBeforeItsInputsGeometryChangedReadsThatView) {
  // AotProgramFuzz, seed 1116825. `u`, a view of the input made before its geometry changed
  // under no_grad, gets its history regenerated at its next use (as_strided of its base with its
  // geometry); an as_strided of `u` reaching past it, returned, passes no gradient to the base's
  // elements outside `u`. The runtime replayed the output from the caller's old geometry, whose
  // history went stale and was rebuilt from the base, so those elements got gradient.
  auto body = [](std::function<void(Tensor&)> change) {
    return [change](std::vector<Tensor> a) {
      Tensor u = a[0].slice(0, 1, 3);
      {
        ag::NoGradGuard no_grad;
        change(a[0]);
      }
      // Three neighbours in the storage from u's first element on: some are not u's.
      Tensor past = u.as_strided({3}, {1}, u.storage_offset());
      return std::vector<Tensor>{past.alias(), a[0]};
    };
  };
  // The caller's tensor a view (its sizes may change: the view's history is its base's).
  expect_like_eager(
      [] {
        Tensor leaf = test_input({5, 6});
        return OracleSetup{{leaf.select(1, 4)}, {leaf}};
      },
      body([](Tensor& x) { ag::unsqueeze_(x, 0); }));
  // No view (sizes kept: eager's backward raises otherwise, and that is refused).
  expect_like_eager(
      [] {
        Tensor leaf = test_input({3, 3});
        return OracleSetup{{leaf * 2.0}, {leaf}};
      },
      body([](Tensor& x) { ag::t_(x); }));
}

namespace {

TEST(MetadataMutation, LeafTransposedAndWrittenUnderNoGradTakesTheGradientAsIs) {
  // AotProgramFuzz, seed 926919: a square leaf that requires grad, transposed and then written
  // under no_grad, used with grad on after. Refused until the input's own geometry step was
  // marked (seed 1516068's fix): read again from the root after the write, its value went
  // through a plain transpose, whose VJP turned the gradient back; eager's AccumulateGrad takes
  // the new geometry's gradient as it is.
  expect_like_eager(
      [] {
        Tensor leaf = test_input({3, 3}, -1, 1, 362035);
        return OracleSetup{{leaf}, {leaf}};
      },
      [](std::vector<Tensor> a) {
        Tensor x = a[0];
        Tensor c;
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(x, 0, 1);
          x.mul_(x);
          c = ag::cat({x, x}, 1);
        }
        Tensor d = (x - 2.0).sum({1}, true) - c;
        return std::vector<Tensor>{(d * d).mean({1}, true), c};
      });
}

}  // namespace

// ---- views of an INPUT made before its geometry changed in place under no_grad ----
//
// Eager (PyTorch 1.13): the change records nothing; a view `u` of the input made before it, used
// after, has its history regenerated (the version moved) as an as_strided of its base with u's
// geometry. Gap 1: u read after the change (by an op with grad on, or returned); gap 2: u written
// with grad on after the change. Every input kind, every geometry op.

namespace {

enum class InputKind {
  leaf,
  non_leaf,
  caller_slice,
  caller_select,
  passed_twice,
  two_views,
  no_grad
};
enum class GeometryOp { t, transpose, unsqueeze, squeeze, as_strided };

const char* kind_name(InputKind k) {
  switch (k) {
    case InputKind::leaf:
      return "Leaf";
    case InputKind::non_leaf:
      return "NonLeaf";
    case InputKind::caller_slice:
      return "CallerSlice";
    case InputKind::caller_select:
      return "CallerSelect";
    case InputKind::passed_twice:
      return "PassedTwice";
    case InputKind::two_views:
      return "TwoViews";
    case InputKind::no_grad:
      return "NoGrad";
  }
  return "?";
}

const char* op_name(GeometryOp o) {
  switch (o) {
    case GeometryOp::t:
      return "T";
    case GeometryOp::transpose:
      return "Transpose";
    case GeometryOp::unsqueeze:
      return "Unsqueeze";
    case GeometryOp::squeeze:
      return "Squeeze";
    case GeometryOp::as_strided:
      return "AsStrided";
  }
  return "?";
}

// The input's sizes: squeeze_ needs a dimension of size 1.
ag::IntList input_sizes(GeometryOp o) {
  return o == GeometryOp::squeeze ? ag::IntList{3, 1, 3} : ag::IntList{3, 3};
}

void change_geometry(Tensor& x, GeometryOp o) {
  switch (o) {
    case GeometryOp::t:
      ag::t_(x);
      break;
    case GeometryOp::transpose:
      ag::transpose_(x, 0, 1);
      break;
    case GeometryOp::unsqueeze:
      ag::unsqueeze_(x, 1);
      break;
    case GeometryOp::squeeze:
      ag::squeeze_(x, 1);
      break;
    case GeometryOp::as_strided:
      ag::as_strided_(x, {3, 3}, {1, 3});
      break;
  }
}

// The inputs (a[0] is the one changed; a[1] is a second input for passed_twice and two_views)
// and, last, a leaf `w` of 3 elements a write multiplies by.
OracleSetup input_setup(InputKind k, GeometryOp o) {
  ag::IntList s = input_sizes(o);
  ag::IntList bigger = s;
  bigger[0] += 1;
  Tensor w = test_input({3}, -1, 1, 7);
  switch (k) {
    case InputKind::leaf: {
      Tensor l = test_input(s);
      return {{l, w}, {l, w}};
    }
    case InputKind::non_leaf: {
      Tensor l = test_input(s);
      return {{l * 2.0, w}, {l, w}};
    }
    case InputKind::caller_slice: {
      Tensor l = test_input(bigger);
      return {{l.slice(0, 1, s[0] + 1), w}, {l, w}};
    }
    case InputKind::caller_select: {
      ag::IntList stacked = s;
      stacked.insert(stacked.begin(), 2);
      Tensor l = test_input(stacked);
      return {{(l * 1.0).select(0, 1), w}, {l, w}};
    }
    case InputKind::passed_twice: {
      Tensor l = test_input(s);
      Tensor x = l * 2.0;
      return {{x, x, w}, {l, w}};
    }
    case InputKind::two_views: {
      Tensor l = test_input(bigger);
      Tensor b = l * 1.0;
      return {{b.slice(0, 0, s[0]), b.slice(0, 1, s[0] + 1), w}, {l, w}};
    }
    case InputKind::no_grad: {
      return {{plain(s), w}, {w}};
    }
  }
  return {};
}

using InputGeometryCase = std::tuple<InputKind, GeometryOp>;

class ViewOfAnInputMadeBeforeItsGeometryChanged
    : public ::testing::TestWithParam<InputGeometryCase> {};

std::string input_geometry_case_name(const ::testing::TestParamInfo<InputGeometryCase>& info) {
  return std::string(kind_name(std::get<0>(info.param))) + op_name(std::get<1>(info.param));
}

}  // namespace

// u read after the change: by an op with grad on, and returned. Eager regenerates u's history
// from the input's node (PyTorch 1.13, x = l * 2 (3x3, l = arange(9)), u = x[1]; with no_grad:
// x.t_(); (u * [1, 10, 100]).sum().backward() gives l.grad [[0, 2, 0], [0, 20, 0],
// [0, 200, 0]]: column 1, where the graph sent it to row 1; a leaf l itself: [[0, 1, 0], ...]).
// Where the sizes changed, eager's backward through u raises (AsStridedBackward0 returned an
// invalid gradient: got [3, 1, 3] but expected [3, 3]) for an input whose node requires grad:
// refused at trace time. A caller's view (and a member of a synthetic base) is regenerated from
// the caller's base, where u's geometry addresses the same elements: as before the change.
TEST_P(ViewOfAnInputMadeBeforeItsGeometryChanged, ReadAfterTheChange) {
  auto [kind, op] = GetParam();
  auto fn = [op = op](std::vector<Tensor> a) {
    Tensor u = a[0].select(0, 1);
    Tensor r = a[0].slice(0, 0, 2);
    {
      ag::NoGradGuard no_grad;
      change_geometry(a[0], op);
    }
    Tensor w = a.back();
    std::vector<Tensor> out{u * w, u, r.sum(), a[0]};
    if (a.size() == 3) out.push_back(a[1]);
    return out;
  };
  auto make = [kind = kind, op = op] { return input_setup(kind, op); };
  bool sizes_change = op == GeometryOp::unsqueeze || op == GeometryOp::squeeze;
  if (sizes_change &&
      (kind == InputKind::leaf || kind == InputKind::non_leaf || kind == InputKind::passed_twice)) {
    ag::testing::expect_unsupported(
        [&make] {
          OracleSetup s = make();
          return ag::testing::ScenarioInputs{s.inputs, s.leaves};
        },
        [&fn](const ag::testing::TensorList& a) { return fn(a); }, "in place under no_grad");
    return;
  }
  expect_like_eager(make, fn);
  ag::testing::run_scenario(  // also through the artifact, serialized and read back
      [&make] {
        OracleSetup s = make();
        return ag::testing::ScenarioInputs{s.inputs, s.leaves};
      },
      [&fn](const ag::testing::TensorList& a) { return fn(a); });
}

// u written with grad on after the change: eager's CopySlices passes the unwritten part of the
// gradient to the input's node in the new geometry as it is, which the graph does not model:
// refused at trace time for an input that is no view in eager (PyTorch 1.13, x = l * 2,
// u = x[1]; with no_grad: x.t_(); u.mul_(w); (x * arange(9).view(3, 3)).sum().backward() gives
// l.grad [0, 2, 4, 6, 80, 10, 12, 1400, 16] and w.grad [6, 32, 70]). A caller's view is
// regenerated from the caller's base: as before the change. A view of a caller's leaf raises in
// eager.
TEST_P(ViewOfAnInputMadeBeforeItsGeometryChanged, WrittenWithGradOnAfterTheChange) {
  auto [kind, op] = GetParam();
  auto fn = [op = op](std::vector<Tensor> a) {
    Tensor u = a[0].select(0, 1);
    {
      ag::NoGradGuard no_grad;
      change_geometry(a[0], op);
    }
    Tensor w = a.back();
    u.mul_(w);
    std::vector<Tensor> out{a[0] * 1.0, u, a[0]};
    if (a.size() == 3) out.push_back(a[1]);
    return out;
  };
  auto make = [kind = kind, op = op] { return input_setup(kind, op); };
  if (kind == InputKind::leaf && (op == GeometryOp::unsqueeze || op == GeometryOp::squeeze)) {
    // Eager raises at the write; the compiled function refuses the program earlier, at the
    // sizes change (a leaf's sizes changed under no_grad).
    OracleSetup e = make(), c = make();
    EXPECT_ANY_THROW(fn(e.inputs));
    EXPECT_ANY_THROW(ag::aot_function(fn)(c.inputs));
    return;
  }
  if (kind == InputKind::leaf || kind == InputKind::caller_slice) {
    // A view of a leaf that requires grad, written in place: eager raises, and so must the
    // compiled function.
    ag::testing::expect_raises_like_eager(
        [&make] {
          OracleSetup s = make();
          return ag::testing::ScenarioInputs{s.inputs, s.leaves};
        },
        [&fn](const ag::testing::TensorList& a) { return fn(a); },
        "a view of a leaf Variable that requires grad is being used in an in-place operation");
    return;
  }
  if (kind == InputKind::non_leaf || kind == InputKind::passed_twice ||
      kind == InputKind::no_grad) {
    bool sizes_change = op == GeometryOp::unsqueeze || op == GeometryOp::squeeze;
    ag::testing::expect_unsupported(
        [&make] {
          OracleSetup s = make();
          return ag::testing::ScenarioInputs{s.inputs, s.leaves};
        },
        [&fn](const ag::testing::TensorList& a) { return fn(a); },
        sizes_change && kind != InputKind::no_grad ? "had its sizes changed in place under no_grad"
                                                   : "writes with grad on to input 0");
    return;
  }
  expect_like_eager(make, fn);
  ag::testing::run_scenario(
      [&make] {
        OracleSetup s = make();
        return ag::testing::ScenarioInputs{s.inputs, s.leaves};
      },
      [&fn](const ag::testing::TensorList& a) { return fn(a); });
}

INSTANTIATE_TEST_SUITE_P(
    MetadataMutation, ViewOfAnInputMadeBeforeItsGeometryChanged,
    ::testing::Combine(::testing::Values(InputKind::leaf, InputKind::non_leaf,
                                         InputKind::caller_slice, InputKind::caller_select,
                                         InputKind::passed_twice, InputKind::two_views,
                                         InputKind::no_grad),
                       ::testing::Values(GeometryOp::t, GeometryOp::transpose,
                                         GeometryOp::unsqueeze, GeometryOp::squeeze,
                                         GeometryOp::as_strided)),
    input_geometry_case_name);

TEST(MetadataMutation,
     ViewOfAnInputMadeBeforeItsTransposeUnderNoGradTakesItsGradientInTheNewGeometry) {
  // Gap 1 for inputs: u = x[1] made before x.t_() under no_grad. Eager regenerates u's history
  // (the version moved) as an as_strided of x's node with u's geometry, so u's gradient lands in
  // column 1 of x's, passed to x's node as it is; the graph sent it to row 1 through select's
  // VJP. PyTorch 1.13: l = arange(9.).view(3, 3); x = l * 2; u = x[1]; with no_grad: x.t_();
  // (u * [1, 10, 100]).sum().backward(): l.grad = [[0, 2, 0], [0, 20, 0], [0, 200, 0]]; with
  // x = l itself (a leaf): [[0, 1, 0], [0, 10, 0], [0, 100, 0]].
  auto fn = [](const Tensor& x) {
    Tensor u = x.select(0, 1);
    {
      ag::NoGradGuard no_grad;
      Tensor alias = x;
      ag::t_(alias);
    }
    return (u * ag::from_vector(std::vector<double>{1, 10, 100}, {3})).sum();
  };
  for (bool leaf : {false, true}) {
    SCOPED_TRACE(leaf ? "leaf" : "non-leaf");
    Tensor l = ag::arange(9.0).to(ag::DType::f64).view({3, 3}).clone().requires_grad_();
    auto f = ag::aot_function(fn);
    f(leaf ? l : l * 2.0).backward();
    double k = leaf ? 1.0 : 2.0;
    Tensor expected =
        ag::from_vector(std::vector<double>{0, k, 0, 0, 10 * k, 0, 0, 100 * k, 0}, {3, 3});
    EXPECT_TRUE(allclose(l.grad(), expected, 0, 0)) << l.grad();
  }
}

TEST(MetadataMutation, ViewOfAnInputMadeBeforeItsGeometryChangedWrittenWithGradOnIsRefused) {
  // Gap 2 for inputs: u = x[1] made before x.t_() under no_grad, then u.mul_(w) with grad on.
  // Eager's CopySlices passes the unwritten part of x's gradient, laid out in the new geometry,
  // to x's node as it is (PyTorch 1.13: l = arange(9.).view(3, 3); x = l * 2; w = [1, 10, 100];
  // (x * arange(9.).view(3, 3)).sum().backward(): l.grad = [0, 2, 4, 6, 80, 10, 12, 1400, 16],
  // w.grad = [6, 32, 70]); the graph gave other values. Refused at trace time.
  ag::testing::expect_unsupported(
      [] {
        Tensor l = ag::testing::leaf({3, 3}, 5);
        Tensor w = ag::testing::leaf({3}, 6);
        return ag::testing::ScenarioInputs{{l * 2.0, w}, {l, w}};
      },
      [](const ag::testing::TensorList& a) {
        Tensor x = a[0];
        Tensor u = x.select(0, 1);
        {
          ag::NoGradGuard no_grad;
          ag::t_(x);
        }
        u.mul_(a[1]);
        return ag::testing::TensorList{x * 1.0};
      },
      "writes with grad on to input 0, whose geometry changed in place under no_grad");
}

TEST(MetadataMutation, ViewOfAnInputMadeBeforeItsGeometryChangedWrittenWhereNothingRequiresGrad) {
  // AotProgramFuzz, seeds 3640484 and 3642264: gap 2 where neither the input nor what is written
  // requires grad. Eager makes no CopySlices then, so the write is data only; it was refused.
  expect_like_eager(
      [] {
        return OracleSetup{{plain({3, 3}, 5), plain({3}, 6)}, {}};
      },
      [](std::vector<Tensor> a) {
        Tensor x = a[0];
        Tensor u = x.select(0, 1);
        {
          ag::NoGradGuard no_grad;
          ag::t_(x);
        }
        u.mul_(a[1]);
        return std::vector<Tensor>{x * 1.0, u};
      });
}

TEST(MetadataMutation, ViewOfAnInputMadeBeforeItsSizesChangedUsedUnderNoGrad) {
  // AotProgramFuzz, seed 3642581: gap 1 where the view is read under no_grad only. Eager's
  // regenerated history of the view is never built there (no_grad records nothing); it was
  // refused. x's own sizes come back before it is used with grad on.
  expect_like_eager(
      [] {
        Tensor leaf = test_input({3, 3}, -1, 1, 7);
        return OracleSetup{{leaf * 2.0}, {leaf}};
      },
      [](std::vector<Tensor> a) {
        Tensor x = a[0];
        Tensor u = x.select(0, 1);
        Tensor c;
        {
          ag::NoGradGuard no_grad;
          ag::unsqueeze_(x, 1);
          c = u * 2.0 + x.sum();
          ag::squeeze_(x, 1);
        }
        return std::vector<Tensor>{c, (x * x).sum(0)};
      });
}

TEST(MetadataMutation, ViewOfAnInputMadeBeforeItsSizesChangedUnderNoGradIsRefusedOnlyWhereUsed) {
  // Eager's backward through u = x[1] made before x.unsqueeze_(1) under no_grad raises (PyTorch
  // 1.13: AsStridedBackward0 returned an invalid gradient, got [3, 1, 3] but expected [3, 3]):
  // refused where u is used after the change; a u left unused changes nothing (x's own
  // gradient in the new sizes raises in eager too, so x is returned detached).
  ag::testing::expect_unsupported(
      [] {
        return ag::testing::nonleaf_setup({3, 3}, 8);
      },
      [](const ag::testing::TensorList& a) {
        Tensor x = a[0];
        Tensor u = x.select(0, 1);
        {
          ag::NoGradGuard no_grad;
          ag::unsqueeze_(x, 1);
        }
        return ag::testing::TensorList{u * 2.0};
      },
      "had its sizes changed in place under no_grad (aten.unsqueeze_.default) after a view");
  auto f = ag::aot_function([](const Tensor& x) {
    Tensor u = x.select(0, 1);
    {
      ag::NoGradGuard no_grad;
      Tensor alias = x;
      ag::unsqueeze_(alias, 1);
    }
    return x.detach() * 2.0;
  });
  Tensor l = test_input({3, 3});
  Tensor x = l * 1.0;
  Tensor out = f(x);
  EXPECT_EQ(x.sizes(), (ag::IntList{3, 1, 3}));
  EXPECT_TRUE(allclose(out, l.detach().unsqueeze(1) * 2.0, 0, 0)) << out;
}

TEST(MetadataMutation, ViewOfAnInputMadeBeforeThatInputsOwnSizesChangeKeepsItsSizes) {
  // AotProgramFuzz, seeds 3023376 and 3043700 (below). 3023376: two overlapping views of one caller
  // tensor (one synthetic base); under no_grad v = a1.t() and a0.unsqueeze_(1); then
  // a1.unsqueeze_(0) and a write through a0, and v.expand({2}) returned. v keeps eager's sizes [1];
  // the runtime rebuilt the output from a view made before a0's change, with the geometry a1 has
  // *after* its own change
  // ([1, 1]), and the expand raised where eager did not.
  auto make = [] {
    Tensor r = plain({5}, 3);
    return OracleSetup{{r.slice(0, 2, 5, 2).view({2, 1}), r.slice(0, 4, 5, 1)}, {}};
  };
  expect_like_eager(make, [](std::vector<Tensor> a) {
    Tensor v;
    {
      ag::NoGradGuard no_grad;
      v = a[1].t();
      ag::unsqueeze_(a[0], 1);
    }
    ag::unsqueeze_(a[1], 0);
    ag::sigmoid_(a[0]);
    return std::vector<Tensor>{v.expand({2}), v};
  });
  // The same with a non-leaf base that requires grad, v made with grad on: gradients as eager's.
  auto make_grad = [] {
    Tensor l = test_input({5});
    Tensor r = l * 1.0;
    return OracleSetup{{r.slice(0, 2, 5, 2).view({2, 1}), r.slice(0, 4, 5, 1)}, {l}};
  };
  expect_like_eager(make_grad, [](std::vector<Tensor> a) {
    Tensor v = a[1].t();
    {
      ag::NoGradGuard no_grad;
      ag::unsqueeze_(a[0], 1);
    }
    ag::unsqueeze_(a[1], 0);
    ag::sigmoid_(a[0]);
    return std::vector<Tensor>{v.expand({2}) * 3.0, v, a[1] * 2.0};
  });
  // Seed 3043700: one caller tensor passed as three inputs; under no_grad a write through one and
  // v = a1.permute({0, 1}), then a1.t_(): v keeps [5, 3], which the expand needs.
  auto make_three = [] {
    Tensor r = plain({5, 3}, 3);
    return OracleSetup{{r.unsqueeze(2), r, r.unsqueeze(1)}, {}};
  };
  expect_like_eager(make_three, [](std::vector<Tensor> a) {
    Tensor s = a[0].squeeze(2);
    Tensor v;
    {
      ag::NoGradGuard no_grad;
      s.add_(0.5);
      v = a[1].permute({0, 1});
      ag::t_(a[1]);
    }
    return std::vector<Tensor>{s, v.expand({2, 5, 3}), a[1]};
  });
}
TEST(MetadataMutation, InputGeometryChangedInBothGradModesReplaysEachRunInItsMode) {
  // AotProgramFuzz, seed 3147838: a non-leaf input transposed with grad on, then transposed again
  // (sizes kept) and written under no_grad. Eager records the first transpose_ on the input's
  // node and not the second, so the gradient of the final geometry reaches TransposeBackward as
  // it is laid out; the runtime replayed the whole change with grad on, which maps it back
  // through both: another gradient for the leaf.
  auto make = [] { return non_leaf({3, 4, 4}); };
  expect_like_eager(make, [](std::vector<Tensor> a) {
    Tensor s = a[0].sigmoid();
    ag::transpose_(a[0], 2, 0);
    Tensor v = s.reshape({3, 2, 2, 4});
    {
      ag::NoGradGuard no_grad;
      ag::transpose_(a[0], 0, 1);
      ag::sigmoid_(a[0]);
    }
    return std::vector<Tensor>{v};
  });
  // Under no_grad first, then with grad on.
  expect_like_eager(
      [] {
        return non_leaf({4, 4, 3});
      },
      [](std::vector<Tensor> a) {
        {
          ag::NoGradGuard no_grad;
          ag::transpose_(a[0], 0, 1);
        }
        ag::transpose_(a[0], 2, 0);
        return std::vector<Tensor>{a[0].sigmoid()};
      });
  // A square input back in the caller's geometry: not a change, but eager's node transposes the
  // gradient once.
  expect_like_eager(
      [] {
        return non_leaf({3, 3});
      },
      [](std::vector<Tensor> a) {
        ag::t_(a[0]);
        {
          ag::NoGradGuard no_grad;
          ag::t_(a[0]);
        }
        return std::vector<Tensor>{a[0] * 2.0};
      });
  // The no_grad run changed the sizes the recorded run's node expects: eager's backward raises,
  // and so does the compiled function's.
  auto fn = [](std::vector<Tensor> a) {
    ag::transpose_(a[0], 2, 0);
    {
      ag::NoGradGuard no_grad;
      ag::transpose_(a[0], 0, 1);
    }
    return std::vector<Tensor>{a[0] * 2.0};
  };
  OracleSetup e = non_leaf({4, 4, 3}), c = non_leaf({4, 4, 3});
  std::string eager_error, compiled_error;
  try {
    fn(e.inputs)[0].sum().backward();
  } catch (const std::exception& x) {
    eager_error = x.what();
  }
  try {
    ag::aot_function(fn)(c.inputs)[0].sum().backward();
  } catch (const std::exception& x) {
    compiled_error = x.what();
  }
  const char* expected =
      "invalid gradient at index 0 - got [4, 3, 4] but expected shape "
      "compatible with [3, 4, 4]";
  EXPECT_TRUE(contains(eager_error, expected)) << eager_error;  // from MulBackward0
  EXPECT_TRUE(contains(compiled_error, expected)) << compiled_error;
}

TEST(MetadataMutation, InputChangedInBothGradModesAndWrittenWithGradOnBetween) {
  // Runs in both modes with a write with grad on among them: eager's node is the write's (at the
  // geometry the input had then), plus the changes with grad on after it; a change under no_grad
  // after the write is not recorded, so the final geometry's gradient reaches the write's node as
  // it is laid out.
  using Step = std::function<void(Tensor&)>;
  const Step t_grad = [](Tensor& x) { ag::t_(x); };
  const Step t_no_grad = [](Tensor& x) {
    ag::NoGradGuard no_grad;
    ag::t_(x);
  };
  const Step write = [](Tensor& x) { x.mul_(2.0); };
  const Step write_row = [](Tensor& x) { x.select(0, 1).mul_(3.0); };
  const Step write_no_grad = [](Tensor& x) {
    ag::NoGradGuard no_grad;
    x.add_(1.0);
  };
  const std::vector<std::vector<Step>> programs = {
      {t_grad, write, t_no_grad},                 // back to the caller's geometry
      {t_no_grad, write, t_grad},                 // likewise
      {t_grad, t_no_grad, write},                 // written after both
      {t_grad, write, t_no_grad, write},          // written again after the no_grad change
      {t_no_grad, write, t_grad, t_no_grad},      // transposed once in the end
      {t_grad, write_no_grad, t_no_grad, write},  // a no_grad write among them
      {write, t_grad, t_no_grad, t_grad},         // written first
      {t_grad, write_row, t_no_grad},             // written through a view of it
      {t_no_grad, write_row, t_grad, t_no_grad},
  };
  for (size_t p = 0; p < programs.size(); ++p) {
    SCOPED_TRACE("program " + std::to_string(p));
    auto g = expect_like_eager(
        [] {
          return non_leaf({3, 3});
        },
        [steps = programs[p]](std::vector<Tensor> a) {
          for (const Step& s : steps) s(a[0]);
          return std::vector<Tensor>{a[0] * plain({3, 3}, 4)};
        });
    if (p == 0) {
      EXPECT_TRUE(contains(g.meta,
                           "metadata mutation of user input 0 in runs: sizes [3, 3] strides [3, 1] "
                           "storage_offset 0 (under no_grad); after the last write, made with grad "
                           "on in sizes [3, 3] strides [1, 3] storage_offset 0"))
          << g.meta;
    }
  }
  // Sizes that change after the write: the write's node fits the gradient to its sizes as
  // eager's does (a leading 1 summed away).
  const Step unsqueeze_no_grad = [](Tensor& x) {
    ag::NoGradGuard no_grad;
    ag::unsqueeze_(x, 0);
  };
  const Step squeeze_grad = [](Tensor& x) { ag::squeeze_(x, 0); };
  const std::vector<std::vector<Step>> resized = {
      {t_grad, write, unsqueeze_no_grad},
      {t_grad, write, t_grad, unsqueeze_no_grad},
      {t_grad, write, unsqueeze_no_grad, squeeze_grad},
  };
  for (size_t p = 0; p < resized.size(); ++p) {
    SCOPED_TRACE("resized program " + std::to_string(p));
    expect_like_eager(
        [] {
          return non_leaf({3, 4});
        },
        [steps = resized[p]](std::vector<Tensor> a) {
          for (const Step& s : steps) s(a[0]);
          return std::vector<Tensor>{a[0].sin()};
        });
  }
  // Written in sizes a change under no_grad gave it: eager's write passes its history a gradient
  // in other sizes, and its backward raises. Refused.
  auto written_in_unrecorded_sizes = [&](std::vector<Tensor> a) {
    for (const Step& s : {t_no_grad, write, t_grad, unsqueeze_no_grad}) s(a[0]);
    return std::vector<Tensor>{a[0].sin()};
  };
  OracleSetup e = non_leaf({3, 4});
  EXPECT_THROW(written_in_unrecorded_sizes(e.inputs)[0].sum().backward(), std::exception);
  expect_refused(
      [&] {
        ag::aot_function(written_in_unrecorded_sizes)(non_leaf({3, 4}).inputs);
      },
      {"input 0 was written with grad on in sizes [4, 3]"});
}

TEST(MetadataMutation, ViewChangedInBothGradModesAndWrittenWithGradOnBetweenIsRefused) {
  // The caller's tensor is a view: its write rebases its base's history, which the runtime does
  // not replay in another geometry. Refused with one line, not run with another gradient.
  auto fn = [](std::vector<Tensor> a) {
    ag::t_(a[0]);
    a[0].mul_(2.0);
    {
      ag::NoGradGuard no_grad;
      ag::t_(a[0]);
    }
    return std::vector<Tensor>{a[0] * plain({3, 3}, 4)};
  };
  Tensor leaf = test_input({4, 3});
  Tensor base = leaf * 2.0;
  expect_refused([&] { ag::aot_function(fn)(std::vector<Tensor>{base.slice(0, 1, 4)}); },
                 {"input 0 is a view", "Change the geometry before the call"});
}

TEST(MetadataMutation, AGradientTheRecordedChangeCannotTakeRaisesInBackwardNotInTheCall) {
  // unsqueeze_ with grad on, squeeze_ under no_grad: eager's node (UnsqueezeBackward) expects a
  // [1, 3, 3] gradient and gets [3, 3]. Eager raises in backward; the call itself runs, and so
  // does the compiled one (it raised at the call, building the joint graph, before).
  auto fn = [](std::vector<Tensor> a) {
    ag::unsqueeze_(a[0], 0);
    {
      ag::NoGradGuard no_grad;
      ag::squeeze_(a[0], 0);
    }
    return std::vector<Tensor>{a[0].cos()};
  };
  OracleSetup e = non_leaf({3, 3}), c = non_leaf({3, 3});
  std::vector<Tensor> eager_out = fn(e.inputs);
  std::vector<Tensor> compiled_out = ag::aot_function(fn)(c.inputs);
  EXPECT_TRUE(allclose(compiled_out[0], eager_out[0]));
  EXPECT_EQ(c.inputs[0].sizes(), (ag::IntList{3, 3}));
  const char* expected =
      "invalid gradient at index 0 - got [3, 3] but expected shape compatible "
      "with [1, 3, 3]";
  for (const Tensor& out : {eager_out[0], compiled_out[0]}) expect_backward_raises(out, expected);
}

TEST(MetadataMutation, ChangedWrittenAndChangedBackUnderNoGradKeepsTheInputsNode) {
  // All three under no_grad: eager records none of them, so the gradient of the final geometry
  // (the caller's) reaches the input's node as it is. The value read after the write was a new
  // one, whose change back was fitted to the changed geometry's shape: its backward raised.
  for (bool transpose : {false, true})
    expect_like_eager(
        [] {
          return non_leaf({3, 4});
        },
        [transpose](std::vector<Tensor> a) {
          {
            ag::NoGradGuard no_grad;
            transpose ? ag::t_(a[0]) : ag::unsqueeze_(a[0], 0);
            a[0].add_(1.0);
            transpose ? ag::t_(a[0]) : ag::squeeze_(a[0], 0);
          }
          return std::vector<Tensor>{a[0].sin() * plain({3, 4}, 3)};
        });
}

TEST(MetadataMutation, SizesChangedAndWrittenUnderNoGradThenWrittenWithGradOnRaisesInBackward) {
  // t_ of a [3, 4] non-leaf input and a write, both under no_grad, then a write with grad on:
  // eager's MulBackward passes a [4, 3] gradient to the input's node, made for [3, 4], and its
  // backward raises. The value read after the no_grad write was replayed through a plain
  // transpose, whose VJP turned the gradient back: the compiled backward ran.
  for (bool through_detach : {false, true}) {
    auto fn = [through_detach](std::vector<Tensor> a) {
      {
        ag::NoGradGuard no_grad;
        ag::t_(a[0]);
        if (!through_detach) a[0].add_(1.0);
      }
      if (through_detach) a[0].detach().add_(1.0);
      a[0].mul_(2.0);
      return std::vector<Tensor>{a[0].sin()};
    };
    OracleSetup e = non_leaf({3, 4}), c = non_leaf({3, 4});
    std::vector<Tensor> eager_out = fn(e.inputs);
    std::vector<Tensor> compiled_out = ag::aot_function(fn)(c.inputs);
    EXPECT_TRUE(allclose(compiled_out[0], eager_out[0]));
    for (const Tensor& out : {eager_out[0], compiled_out[0]})
      expect_backward_raises(out,
                             "invalid gradient at index 0 - got [4, 3] but expected shape "
                             "compatible with [3, 4]");
  }
}

TEST(MetadataMutation, CallerViewOfAMemberChangedUnderNoGradTakesItsRegeneratedHistory) {
  // AotProgramFuzz, seed 3225134: inputs r1 (a non-leaf) and r1.view({9}), a synthetic base
  // whose member r1 is the view's _base in eager. r1.t_() under no_grad bumps the version, so
  // eager regenerates the view's history at its next use as an as_strided of r1 in its new
  // geometry, and r1's node takes that gradient as it is: transposed. The compiled graph read
  // the view from the base in its old geometry: r0's gradient was not transposed.
  auto setup = [] {
    Tensor r0 = test_input({3, 3});
    Tensor r1 = r0 * 1.0;
    return OracleSetup{{r1, r1.view({9})}, {r0}};
  };
  expect_like_eager(setup, [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::transpose_(a[0], 0, 1);
    }
    return std::vector<Tensor>{a[1].relu()};
  });
  expect_like_eager(setup, [](std::vector<Tensor> a) {
    {
      ag::NoGradGuard no_grad;
      ag::transpose_(a[0], 0, 1);
    }
    ag::unsqueeze_(a[0], 2);
    return std::vector<Tensor>{a[1].relu(), a[0]};
  });
  // A view of the view made inside the function before the change: the same.
  expect_like_eager(setup, [](std::vector<Tensor> a) {
    Tensor part = a[1].slice(0, 2, 7);
    {
      ag::NoGradGuard no_grad;
      ag::t_(a[0]);
    }
    return std::vector<Tensor>{part.exp(), a[0] * 2.0};
  });
}
