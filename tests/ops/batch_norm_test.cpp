// Batch normalisation: training and eval values, running-statistic updates (momentum, unbiased
// variance) and gradients against PyTorch 1.13 literals; finite-difference gradients; the
// functional and backward rows; dtypes; errors; compiled == eager.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <tuple>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::allclose;
using testing::contains;
using testing::error_of;
using testing::f64;
using testing::gradcheck;
using testing::pattern;
using testing::test_input;

// The torch case: x [2, 3, 2, 2], weight, bias, running stats before the call.
struct TorchCase {
  Tensor x = pattern({2, 3, 2, 2}).requires_grad_();
  Tensor w = (pattern({3}, 11, 7) + 2).detach().requires_grad_();
  Tensor b = pattern({3}, 3, 5).requires_grad_();
  Tensor rm = pattern({3}, 5, 7) / 10;
  Tensor rv = f64({0.5, 0.75, 1.0}, {3});
  Tensor g = pattern({2, 3, 2, 2}, 29, 31);
};

const std::vector<double> kRunningMeanAfter{-0.11475, -0.06225, -0.0981};
const std::vector<double> kRunningVarAfter{0.483245, 0.708245, 0.94082};

TEST(BatchNormTrain, MatchesTorchIncludingRunningStats) {
  TorchCase c;
  const uint64_t version = c.rm.version();
  auto [out, save_mean, save_invstd] =
      native_batch_norm(c.x, c.w, c.b, c.rm, c.rv, true, 0.1, 1e-5);
  EXPECT_TRUE(allclose(
      out,
      f64({-2.395185148,  -1.023175833, 0.3488334818, -2.024371819,   -1.435592013,  0.04617804667,
           -2.516883679,  -1.035113619, 0.7522860491, -1.432271727,   -0.1693242627, -2.353882039,
           -0.9119318345, 0.4600774803, -1.913127821, -0.5411185062,  0.166321565,   -2.39674016,
           -0.9149701003, 0.5667999596, -1.329870581, -0.06692311699, -2.251480893,  -0.9885334288},
          {2, 3, 2, 2}),
      1e-9));
  EXPECT_TRUE(allclose(save_mean, f64({-0.2475, 0.1875, -0.135}, {3}), 1e-12));
  EXPECT_TRUE(allclose(save_invstd, f64({1.854066642, 1.854066642, 1.673221336}, {3}), 1e-9));
  // ATen's native_batch_norm writes the running statistics in place.
  EXPECT_TRUE(allclose(c.rm, f64(kRunningMeanAfter, {3}), 1e-12));
  EXPECT_TRUE(allclose(c.rv, f64(kRunningVarAfter, {3}), 1e-12));
  EXPECT_GT(c.rm.version(), version);
  out.backward(c.g);
  EXPECT_TRUE(
      allclose(c.x.grad(),
               f64({-0.3476054487, 0.6274419386,  0.4529680081,  0.5523167194,   -0.005244939687,
                    -0.1295282761, -0.1331912502, -0.2574745866, -0.04689330387, -0.07754708788,
                    -0.1675599078, -0.1982136918, -0.1964807295, -0.37095466,    -0.2716059487,
                    -0.4460798792, 0.227319496,   0.2236565219,  0.09937318551,  -0.0249101509,
                    0.2278932097,  0.1378803898,  0.1072266058,  0.01721378593},
                   {2, 3, 2, 2}),
               1e-9));
  EXPECT_TRUE(allclose(c.w.grad(), f64({0.3154694391, 0.1286722249, 0.08232248973}, {3}), 1e-9));
  EXPECT_TRUE(allclose(c.b.grad(), f64({-6.06, -4.24, -5.52}, {3}), 1e-12));
}

TEST(BatchNormTrain, PublicBatchNormMatchesTheRow) {
  TorchCase row, pub;
  Tensor expected =
      std::get<0>(native_batch_norm(row.x, row.w, row.b, row.rm, row.rv, true, 0.1, 1e-5));
  Tensor y = batch_norm(pub.x, pub.w, pub.b, pub.rm, pub.rv, true, 0.1, 1e-5);
  EXPECT_TRUE(allclose(y, expected, 0));
  EXPECT_TRUE(allclose(pub.rm, f64(kRunningMeanAfter, {3}), 1e-12));
  EXPECT_TRUE(allclose(pub.rv, f64(kRunningVarAfter, {3}), 1e-12));
  // The running statistics are buffers: the update leaves them out of autograd.
  EXPECT_FALSE(pub.rm.requires_grad());
  EXPECT_FALSE(pub.rv.requires_grad());
  // Without running statistics: batch statistics only.
  Tensor z = batch_norm(pub.x, pub.w, pub.b, Tensor(), Tensor(), true);
  EXPECT_TRUE(allclose(z, expected, 1e-12));
}

TEST(BatchNormEval, MatchesTorchAndLeavesStatsAlone) {
  TorchCase c;
  c.rm = f64(kRunningMeanAfter, {3});
  c.rv = f64(kRunningVarAfter, {3});
  auto [out, save_mean, save_invstd] =
      native_batch_norm(c.x, c.w, c.b, c.rm, c.rv, false, 0.1, 1e-5);
  EXPECT_TRUE(
      allclose(out,
               f64({-2.273437859,  -1.208943066,  -0.1444482723, -1.985736564,   -0.9371125701,
                    0.01253104067, -1.630095746,  -0.6804521348, 0.04855578714,  -1.297473665,
                    -0.5193003882, -1.865329841,  -1.122632677,  -0.05813788366, -1.899426175,
                    -0.8349313817, 0.08952917127, -1.553097615,  -0.6034540042,  0.3461896066,
                    -1.234378535,  -0.4562052576, -1.80223471,   -1.024061433},
                   {2, 3, 2, 2}),
               1e-9));
  EXPECT_EQ(save_mean.sizes(), IntList{0});
  EXPECT_EQ(save_invstd.sizes(), IntList{0});
  EXPECT_TRUE(allclose(c.rm, f64(kRunningMeanAfter, {3}), 0));
  EXPECT_TRUE(allclose(batch_norm(c.x, c.w, c.b, c.rm, c.rv, false), out, 0));
  out.backward(c.g);
  EXPECT_TRUE(
      allclose(c.x.grad(),
               f64({-1.438506478,  -0.6041727207, -0.6617129798, -0.7192532389, -0.6929831754,
                    -0.7443152625, -0.7956473496, -0.8469794366, -0.7361098569, -0.7781732773,
                    -0.8202366976, -0.862300118,  -1.237115571,  -1.29465583,   -1.352196089,
                    -1.409736348,  -0.5133208707, -0.5646529578, -0.6159850448, -0.6673171319,
                    -0.5888878855, -0.6309513059, -0.6730147263, -0.7150781467},
                   {2, 3, 2, 2}),
               1e-9));
  EXPECT_TRUE(allclose(c.w.grad(), f64({1.401989991, -1.175813737, 0.2607189769}, {3}), 1e-9));
  EXPECT_TRUE(allclose(c.b.grad(), f64({-6.06, -4.24, -5.52}, {3}), 1e-12));
}

TEST(BatchNormGradcheck, TrainAndEvalShapesAndOptionalParams) {
  for (const IntList& shape : {IntList{3, 2, 3, 2}, IntList{5, 3}, IntList{2, 2, 4}}) {
    const int64_t C = shape[1];
    Tensor x = test_input(shape, -1, 1, 1), w = test_input({C}, 0.5, 1.5, 2);
    Tensor b = test_input({C}, -1, 1, 3);
    Tensor rm = test_input({C}, -0.5, 0.5, 4, false), rv = test_input({C}, 0.5, 1.5, 5, false);
    for (bool training : {true, false}) {
      EXPECT_TRUE(gradcheck(
          [&](const std::vector<Tensor>& in) {
            // Fresh statistics each evaluation so finite differences see one function.
            return batch_norm(in[0], in[1], in[2], rm.clone(), rv.clone(), training, 0.1, 1e-5);
          },
          {x, w, b}))
          << shape_to_string(shape) << " training " << training;
    }
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(in[0], Tensor(), Tensor(), Tensor(), Tensor(), true);
        },
        {x}))
        << shape_to_string(shape) << " without parameters";
    EXPECT_TRUE(gradcheck(
        [&](const std::vector<Tensor>& in) {
          return batch_norm(in[0], Tensor(), in[1], rm, rv, false);
        },
        {x, b}))
        << shape_to_string(shape) << " bias only, eval";
  }
}

TEST(BatchNormGradcheck, NonContiguousInput) {
  Tensor store = test_input({2, 3, 4, 3}, -1, 1, 9, false);
  Tensor x = store.permute({0, 3, 1, 2}).requires_grad_();  // [2, 3, 3, 4], channels strided
  ASSERT_FALSE(x.is_contiguous());
  Tensor w = test_input({3}, 0.5, 1.5, 2), b = test_input({3}, -1, 1, 3);
  EXPECT_TRUE(gradcheck(
      [](const std::vector<Tensor>& in) {
        return batch_norm(in[0], in[1], in[2], Tensor(), Tensor(), true);
      },
      {x, w, b}));
  Tensor ref = batch_norm(x.contiguous(), w, b, Tensor(), Tensor(), true);
  EXPECT_TRUE(allclose(batch_norm(x, w, b, Tensor(), Tensor(), true), ref, 1e-12));
}

TEST(BatchNormRows, FunctionalRowReturnsNewStatsWithoutWriting) {
  TorchCase c;
  const ops::OpDef& row = ops::lookup("aten._native_batch_norm_legit_functional.default");
  auto r = ops::dispatch(row, {c.x, c.w, c.b, c.rm, c.rv, true, 0.1, 1e-5});
  ASSERT_EQ(r.size(), 5u);
  EXPECT_TRUE(allclose(r[3], f64(kRunningMeanAfter, {3}), 1e-12));
  EXPECT_TRUE(allclose(r[4], f64(kRunningVarAfter, {3}), 1e-12));
  EXPECT_TRUE(allclose(c.rm, pattern({3}, 5, 7) / 10, 0));  // untouched
  auto e = ops::dispatch(row, {c.x, c.w, c.b, c.rm, c.rv, false, 0.1, 1e-5});
  EXPECT_TRUE(allclose(e[3], c.rm, 0));
  EXPECT_FALSE(e[3].is_same(c.rm));
}

TEST(BatchNormRows, BackwardOutputMask) {
  TorchCase c;
  auto [out, mean, invstd] = native_batch_norm(c.x.detach(), c.w.detach(), c.b.detach(), Tensor(),
                                               Tensor(), true, 0.1, 1e-5);
  const ops::OpDef& row = ops::lookup("aten.native_batch_norm_backward.default");
  auto r = ops::dispatch(row, {c.g, c.x.detach(), c.w.detach(), std::monostate{}, std::monostate{},
                               mean, invstd, true, 1e-5, IntList{0, 1, 1}});
  EXPECT_EQ(r[0].sizes(), IntList{0});
  EXPECT_TRUE(allclose(r[1], f64({0.3154694391, 0.1286722249, 0.08232248973}, {3}), 1e-9));
  EXPECT_TRUE(allclose(r[2], f64({-6.06, -4.24, -5.52}, {3}), 1e-12));
  // Without a weight the gradient is still the weight's would-be gradient, as ATen.
  auto nw = ops::dispatch(row, {c.g, c.x.detach(), std::monostate{}, std::monostate{},
                                std::monostate{}, mean, invstd, true, 1e-5, IntList{1, 1, 0}});
  EXPECT_EQ(nw[1].sizes(), IntList{3});
  EXPECT_EQ(nw[2].sizes(), IntList{0});
}

TEST(BatchNormDtypes, Float32AndMixedBFloat16) {
  TorchCase c;
  Tensor ref = batch_norm(c.x, c.w, c.b, Tensor(), Tensor(), true);
  Tensor y32 = batch_norm(c.x.to(DType::f32), c.w.to(DType::f32), c.b.to(DType::f32), Tensor(),
                          Tensor(), true);
  EXPECT_EQ(y32.dtype(), DType::f32);
  EXPECT_TRUE(allclose(y32, ref, 1e-5, 1e-5));
  // bf16 activations with f32 parameters: statistics in the parameters' dtype, as ATen.
  Tensor rm = zeros({3}), rv = ones({3});
  auto [y, mean, invstd] = native_batch_norm(c.x.to(DType::bf16).detach(), c.w.to(DType::f32),
                                             Tensor(), rm, rv, true, 0.1, 1e-5);
  EXPECT_EQ(y.dtype(), DType::bf16);
  EXPECT_EQ(mean.dtype(), DType::f32);
  EXPECT_EQ(invstd.dtype(), DType::f32);
  EXPECT_TRUE(allclose(mean, f64({-0.2475, 0.1875, -0.135}, {3}), 1e-2));
}

TEST(BatchNormErrors, NameTheArgumentAndTheFix) {
  Tensor x = zeros({2, 3, 4});
  EXPECT_TRUE(
      contains(error_of([&] { batch_norm(x, Tensor(), Tensor(), Tensor(), Tensor(), false); }),
               "must be given in evaluation mode"));
  EXPECT_TRUE(
      contains(error_of([&] { batch_norm(x, zeros({4}), Tensor(), Tensor(), Tensor(), true); }),
               "weight must be a floating tensor of shape [3]"));
  EXPECT_TRUE(contains(error_of([&] {
                         batch_norm(zeros({1, 3}), Tensor(), Tensor(), Tensor(), Tensor(), true);
                       }),
                       "more than 1 value per channel"));
  EXPECT_TRUE(contains(
      error_of([&] { batch_norm(zeros({3}), Tensor(), Tensor(), Tensor(), Tensor(), true); }),
      "at least 2 dims"));
  EXPECT_TRUE(
      contains(error_of([&] { batch_norm(x, Tensor(), Tensor(), zeros({3}), Tensor(), true); }),
               "give both running_mean and running_var"));
}

TEST(BatchNormCompiled, TrainAndEvalMatchEagerWithStatsUpdated) {
  for (const char* partitioner : {"default", "min_cut"}) {
    for (bool training : {true, false}) {
      SCOPED_TRACE(std::string(partitioner) + (training ? " training" : " eval"));
      TorchCase e, c;
      auto fn = [training](const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& rm,
                           const Tensor& rv) {
        return batch_norm(x, w, b, rm, rv, training, 0.3, 1e-4).tanh();
      };
      auto compiled = aot_function(fn, AotConfig{.partitioner = partitioner});
      Tensor ye = fn(e.x, e.w, e.b, e.rm, e.rv);
      Tensor yc = compiled(c.x, c.w, c.b, c.rm, c.rv);
      EXPECT_TRUE(allclose(yc, ye, 1e-12));
      EXPECT_TRUE(allclose(c.rm, e.rm, 1e-14));
      EXPECT_TRUE(allclose(c.rv, e.rv, 1e-14));
      ye.backward(e.g);
      yc.backward(c.g);
      EXPECT_TRUE(allclose(c.x.grad(), e.x.grad(), 1e-12));
      EXPECT_TRUE(allclose(c.w.grad(), e.w.grad(), 1e-12));
      EXPECT_TRUE(allclose(c.b.grad(), e.b.grad(), 1e-12));
    }
  }
}

}  // namespace
}  // namespace aotgrad
