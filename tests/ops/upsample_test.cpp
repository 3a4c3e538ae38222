// upsample_bilinear2d and its backward (issue 18): values against PyTorch 1.13 (pasted from
// torch, f64), both align_corners modes and given scale factors, errors, finite-difference
// gradients (both rows) and compiled == eager under every partitioner.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"
#include "testing/scenario.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

using testing::gradcheck;
using testing::test_input;
using V = std::vector<double>;

Tensor x34() {
  return to(arange(12.0).view({1, 1, 3, 4}), DType::f64);
}

void expect_near(const Tensor& t, const V& expected) {
  V got = to(t, DType::f64).contiguous().to_vector<double>();
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], expected[i], 1e-12) << i;
}

TEST(UpsampleBilinear, ValuesMatchPyTorch) {
  expect_near(upsample_bilinear2d(x34(), {5, 3}, false),
              {0.16666666666666663, 1.5, 2.833333333333333, 1.7666666666666666, 3.1,
               4.433333333333333, 4.166666666666667, 5.5, 6.833333333333333, 6.5666666666666655,
               7.8999999999999995, 9.233333333333333, 8.166666666666666, 9.5, 10.833333333333334});
  expect_near(upsample_bilinear2d(x34(), {5, 3}, true),
              {0, 1.5, 3, 2, 3.5, 5, 4, 5.5, 7, 6, 7.5, 9, 8, 9.5, 11});
  expect_near(upsample_bilinear2d(x34(), {4, 6}, false, 1.5, 1.7), {0.0,
                                                                    0.3823529411764706,
                                                                    0.9705882352941178,
                                                                    1.5588235294117647,
                                                                    2.1470588235294117,
                                                                    2.735294117647059,
                                                                    1.9999999999999998,
                                                                    2.38235294117647,
                                                                    2.9705882352941173,
                                                                    3.558823529411764,
                                                                    4.147058823529411,
                                                                    4.735294117647059,
                                                                    4.666666666666666,
                                                                    5.049019607843137,
                                                                    5.637254901960784,
                                                                    6.225490196078431,
                                                                    6.813725490196077,
                                                                    7.401960784313724,
                                                                    7.333333333333333,
                                                                    7.715686274509803,
                                                                    8.303921568627452,
                                                                    8.892156862745098,
                                                                    9.480392156862745,
                                                                    10.068627450980392});
  // A transposed (non-contiguous) input.
  Tensor t = to(arange(12.0).view({1, 1, 4, 3}), DType::f64).transpose(2, 3);
  expect_near(upsample_bilinear2d(t, {2, 2}, true),
              to(upsample_bilinear2d(t.contiguous(), {2, 2}, true), DType::f64)
                  .contiguous()
                  .to_vector<double>());
}

TEST(UpsampleBilinear, BackwardMatchesPyTorch) {
  Tensor x = x34().requires_grad_();
  Tensor g = to(arange(15.0).view({1, 1, 5, 3}), DType::f64);
  upsample_bilinear2d(x, {5, 3}, false).backward(g);
  expect_near(x.grad(),
              {1.5000000000000004, 2.0, 2.533333333333335, 4.166666666666665, 9.000000000000002,
               8.100000000000001, 8.700000000000005, 11.999999999999996, 14.500000000000002,
               12.399999999999999, 12.933333333333339, 17.16666666666666});
  Tensor y = x34().requires_grad_();
  upsample_bilinear2d(y, {5, 3}, true).backward(g);
  expect_near(y.grad(), {1.5, 1.5, 1.5, 4.5, 12, 7, 7, 16, 16.5, 9, 9, 19.5});
}

TEST(UpsampleBilinear, Errors) {
  auto expect_error = [](const std::function<void()>& fn, const std::string& needle) {
    try {
      fn();
      ADD_FAILURE() << "no error; expected '" << needle << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error([] { upsample_bilinear2d(zeros({3, 4}), {2, 2}, false); }, "4-D");
  expect_error([] { upsample_bilinear2d(zeros({1, 1, 3, 4}), {0, 2}, false); }, "output_size");
  expect_error(
      [] {
        upsample_bilinear2d(zeros({1, 1, 3, 4}, DType::i64), {2, 2}, false);
      },
      "floating");
}

TEST(UpsampleBilinear, Gradcheck) {
  for (bool align : {false, true}) {
    Tensor x = test_input({2, 1, 3, 4}, -1, 1, 51).requires_grad_();
    EXPECT_TRUE(gradcheck(
        [align](const std::vector<Tensor>& in) {
          return upsample_bilinear2d(in[0], {5, 7}, align);
        },
        {x}));
    // The backward row, whose VJP is the forward row.
    Tensor g = test_input({2, 1, 4, 3}, -1, 1, 52).requires_grad_();
    EXPECT_TRUE(gradcheck(
        [align](const std::vector<Tensor>& in) {
          return upsample_bilinear2d_backward(in[0], {4, 3}, {2, 1, 3, 4}, align, 1.3, 0.8);
        },
        {g}));
  }
}

TEST(UpsampleBilinear, CompiledMatchesEagerUnderEveryPartitioner) {
  testing::run_scenario(
      [] {
        return testing::TensorList{testing::leaf({2, 2, 3, 4}, 1)};
      },
      [](const testing::TensorList& a) {
        return testing::TensorList{upsample_bilinear2d(a[0].exp(), {6, 8}, false),
                                   upsample_bilinear2d(a[0], {2, 5}, true) * 2.0};
      });
}

}  // namespace
}  // namespace aotgrad
