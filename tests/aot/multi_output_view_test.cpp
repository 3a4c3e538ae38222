// Multi-output views (split, split_with_sizes, chunk, unbind): every piece is a view of the
// input, under aot_function as in eager — returned pieces alias their base, and a mutation of a
// piece reaches the base.
//
// The rows are dispatched directly (ops::dispatch) so the tracer sees the multi-output view op
// itself; the public functions are checked as well.
#include <gtest/gtest.h>

#include "aot/eager_oracle.h"
#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::contains;
using ag::testing::expect_like_eager;
using ag::testing::OracleSetup;
using ag::testing::test_input;

namespace {

Tensor plain(const ag::IntList& sizes, uint64_t seed = 1) {
  return test_input(sizes, -1, 1, seed, /*requires_grad=*/false);
}

std::vector<Tensor> row(std::string_view name, ag::ops::OpArgs args) {
  return ag::ops::dispatch(ag::ops::lookup(name), std::move(args));
}
std::vector<Tensor> split_row(const Tensor& a, int64_t size, int64_t dim) {
  return row("aten.split.Tensor", {a, size, dim});
}
std::vector<Tensor> unbind_row(const Tensor& a, int64_t dim) {
  return row("aten.unbind.int", {a, dim});
}
std::vector<Tensor> chunk_row(const Tensor& a, int64_t chunks, int64_t dim) {
  return row("aten.chunk.default", {a, chunks, dim});
}
std::vector<Tensor> split_with_sizes_row(const Tensor& a, const ag::IntList& sizes, int64_t dim) {
  return row("aten.split_with_sizes.default", {a, sizes, dim});
}

OracleSetup non_leaf(const ag::IntList& sizes) {
  Tensor leaf = test_input(sizes);
  return {{leaf * 2.0}, {leaf}};
}

OracleSetup leaf(const ag::IntList& sizes) {
  Tensor l = test_input(sizes);
  return {{l}, {l}};
}

}  // namespace

TEST(MultiOutputViewEager, EveryPieceIsAViewOfTheInput) {
  Tensor x = plain({5, 2});
  for (const std::vector<Tensor>& pieces :
       {split_row(x, 2, 0), unbind_row(x, 1), chunk_row(x, 2, 0), split_with_sizes_row(x, {1, 4}, 0)})
    for (const Tensor& p : pieces) {
      EXPECT_TRUE(p.is_view());
      EXPECT_TRUE(p._base().is_same(x));
      EXPECT_TRUE(p.storage() == x.storage());
    }
}

TEST(MultiOutputView, PiecesOfAnInputReturnedAliasTheInput) {
  auto g = expect_like_eager([] { return OracleSetup{{plain({5, 2})}, {}}; },
                             [](std::vector<Tensor> a) {
                               std::vector<Tensor> p = split_row(a[0], 2, 0);
                               return std::vector<Tensor>{p[2], p[0], p[1].sum()};
                             });
  EXPECT_TRUE(contains(g.meta, "output 0: alias_of_input base=0")) << g.meta;
  EXPECT_TRUE(contains(g.meta, "view_chain=[aten.slice.Tensor]")) << g.meta;
  auto u = expect_like_eager([] { return leaf({3, 2}); },
                             [](std::vector<Tensor> a) {
                               std::vector<Tensor> p = unbind_row(a[0], 1);
                               return std::vector<Tensor>{p[1], p[0] * 2.0};
                             });
  EXPECT_TRUE(contains(u.meta, "view_chain=[aten.select.int]")) << u.meta;
}

TEST(MultiOutputView, MutatingAPieceOfAnInputReachesTheInput) {
  auto g = expect_like_eager([] { return OracleSetup{{plain({4, 3})}, {}}; },
                             [](std::vector<Tensor> a) {
                               std::vector<Tensor> p = split_row(a[0], 2, 1);  // [4,2], [4,1]
                               p[1].add_(1.0);
                               return std::vector<Tensor>{a[0] * 2.0, p[0]};
                             });
  EXPECT_TRUE(contains(g.meta, "mutates_data=1")) << g.meta;
  EXPECT_TRUE(contains(g.inference, "aten.slice_scatter.default")) << g.inference;
  // With grad mode on, eager forbids writing a piece of a tensor that requires grad
  // (tests/autograd/view_creation_test.cpp); under no_grad it is allowed.
  expect_like_eager([] { return non_leaf({3, 4}); },
                    [](std::vector<Tensor> a) {
                      {
                        ag::NoGradGuard no_grad;
                        std::vector<Tensor> p = unbind_row(a[0], 0);
                        p[2].mul_(3.0);
                      }
                      return std::vector<Tensor>{a[0].sin(), a[0].select(0, 0)};
                    });
}

TEST(MultiOutputView, MutatingAPieceOfAnIntermediate) {
  auto g = expect_like_eager([] { return leaf({3, 4}); },
                             [](std::vector<Tensor> a) {
                               Tensor y = a[0] * 2.0;
                               {
                                 ag::NoGradGuard no_grad;  // eager forbids it with grad on
                                 std::vector<Tensor> p = unbind_row(y, 0);
                                 p[1].mul_(3.0);
                               }
                               return std::vector<Tensor>{y.exp().sum()};
                             });
  EXPECT_TRUE(contains(g.forward, "aten.unbind.int")) << g.forward;
  EXPECT_TRUE(contains(g.forward, "aten.select_scatter.default")) << g.forward;
  expect_like_eager([] { return leaf({6, 2}); },
                    [](std::vector<Tensor> a) {
                      Tensor y = a[0] * 3.0;
                      {
                        ag::NoGradGuard no_grad;
                        std::vector<Tensor> p = split_with_sizes_row(y, {1, 2, 3}, 0);
                        p[1].zero_();
                        p[2].select(1, 0).add_(p[0].select(1, 1));  // a view of a piece
                      }
                      return std::vector<Tensor>{y * y};
                    });
}

TEST(MultiOutputView, PiecesOfAnIntermediateReturned) {
  auto g = expect_like_eager([] { return leaf({4, 4}); },
                             [](std::vector<Tensor> a) {
                               Tensor y = a[0].exp();
                               std::vector<Tensor> p = chunk_row(y, 2, 1);
                               return std::vector<Tensor>{p[0], p[1]};
                             });
  EXPECT_TRUE(contains(g.meta, "alias_of_intermediate")) << g.meta;
  expect_like_eager([] { return leaf({4, 4}); },
                    [](std::vector<Tensor> a) {
                      Tensor y = a[0].exp();
                      std::vector<Tensor> p = chunk_row(y, 2, 1);
                      return std::vector<Tensor>{y, p[1]};  // the base is a user output
                    });
}

TEST(MultiOutputView, PiecesAfterTheInputWasMutated) {
  // The pieces are regenerated from the mutated storage before their next use. (No grad: eager
  // autograd does not yet regenerate a view's grad_fn after its base is written through another
  // alias, scenario BUG 7.)
  expect_like_eager([] { return OracleSetup{{plain({4, 2})}, {}}; },
                    [](std::vector<Tensor> a) {
                      std::vector<Tensor> p = split_row(a[0], 3, 0);  // [3,2], [1,2]
                      a[0].mul_(2.0);
                      p[1].add_(p[0].sum());
                      return std::vector<Tensor>{p[0] * 1.0, a[0] * 1.0};
                    });
}

TEST(MultiOutputView, PublicFunctionsMatchEager) {
  expect_like_eager([] { return OracleSetup{{plain({5, 3})}, {}}; },
                    [](std::vector<Tensor> a) {
                      std::vector<Tensor> p = ag::split(a[0], 2, 0);
                      p[1].add_(1.0);
                      std::vector<Tensor> u = ag::unbind(a[0], 1);
                      u[2].mul_(-1.0);
                      return std::vector<Tensor>{ag::chunk(a[0], 3, 1)[1], p[2]};
                    });
}
