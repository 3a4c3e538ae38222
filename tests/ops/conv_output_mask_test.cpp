// convolution's VJP and output_mask (issue 18 item 6): a gradient nobody needs is masked out of
// convolution_backward, and the forward value only that gradient reads is not kept. With the
// weight frozen, the convolution's input is not saved for the backward (only the weight is, to
// give the input gradient); likewise an eval-mode batch norm with frozen affine parameters. The
// gradients that are needed are the same as with nothing frozen.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace aotgrad {
namespace {

// y = 2x is an activation (the graph's own value, 200 B) that only the weight gradient reads.
constexpr const char* kConv =
    "graph frozen_conv(%x: f32[1,2,5,5], %w: f32[3,2,3,3], %b: f32[3]) {\n"
    "  %y: f32[1,2,5,5] = aten.mul.Scalar(%x, 2.0)\n"
    "  %z: f32[1,3,5,5] = aten.convolution.default(%y, %w, %b, [1, 1], [1, 1], [1, 1], false, "
    "[0, 0], 1)\n"
    "  return (%z)\n"
    "}\n";

std::vector<Tensor> conv_inputs() {
  return {testing::pattern({1, 2, 5, 5}, 37, 101, DType::f32),
          testing::pattern({3, 2, 3, 3}, 53, 97, DType::f32),
          testing::pattern({3}, 11, 7, DType::f32)};
}

TEST(ConvOutputMask, FrozenWeightSavesNoActivation) {
  GraphProgram p = GraphProgram::parse(kConv, "frozen_conv");
  for (const char* partitioner : {"default", "min_cut"}) {
    const std::string frozen =
        p.show({.backward = true, .partitioner = partitioner, .no_grad = {1, 2}});
    EXPECT_NE(frozen.find("(0 B activations, 216 B graph inputs)"), std::string::npos)
        << partitioner << ":\n"
        << frozen;
    // Training the weight still needs y (min_cut recomputes it from x instead).
    if (std::string(partitioner) == "min_cut") continue;
    const std::string trained = p.show({.backward = true, .partitioner = partitioner});
    EXPECT_NE(trained.find("(200 B activations"), std::string::npos) << partitioner << ":\n"
                                                                     << trained;
  }
}

TEST(ConvOutputMask, NeededGradientsAreThoseOfTheFullBackward) {
  GraphProgram p = GraphProgram::parse(kConv, "frozen_conv");
  const std::vector<Tensor> tangents{testing::pattern({1, 3, 5, 5}, 29, 31, DType::f32)};
  {
    const char* partitioner = "default";  // the VJP, not the partition, decides what is read
    GraphRunResult full =
        p.run(conv_inputs(), {.backward = true, .partitioner = partitioner}, tangents);
    // Frozen weight, trained bias: the input gradient and the bias gradient (from grad_output
    // alone) do not read the input. Frozen input: the weight and bias gradients.
    for (const std::vector<size_t>& frozen : {std::vector<size_t>{1}, std::vector<size_t>{0}}) {
      GraphRunResult r =
          p.run(conv_inputs(), {.backward = true, .partitioner = partitioner, .no_grad = frozen},
                tangents);
      for (size_t i = 0; i < 3; ++i) {
        const bool is_frozen = std::find(frozen.begin(), frozen.end(), i) != frozen.end();
        ASSERT_EQ(r.grads.at(i).defined(), !is_frozen) << partitioner << " input " << i;
        if (is_frozen) continue;
        EXPECT_TRUE(testing::allclose(r.grads[i], full.grads.at(i), 0.0, 0.0))
            << partitioner << " gradient of input " << i;
      }
    }
  }
}

// Eval-mode batch norm reads its input's values only for the weight gradient.
constexpr const char* kBatchNormEval =
    "graph frozen_bn(%x: f32[2,2,3,3], %w: f32[2], %b: f32[2], %rm: f32[2], %rv: f32[2]) {\n"
    "  %y: f32[2,2,3,3] = aten.mul.Scalar(%x, 2.0)\n"
    "  %z: f32[2,2,3,3], %m: f32[0], %s: f32[0] = aten.native_batch_norm.default(%y, %w, %b, "
    "%rm, %rv, false, 0.1, 1e-05)\n"
    "  return (%z)\n"
    "}\n";

TEST(ConvOutputMask, FrozenEvalBatchNormSavesNoActivation) {
  GraphProgram p = GraphProgram::parse(kBatchNormEval, "frozen_bn");
  const std::string frozen = p.show({.backward = true, .no_grad = {1, 2, 3, 4}});
  EXPECT_NE(frozen.find("(0 B activations"), std::string::npos) << frozen;
  std::vector<Tensor> inputs{
      testing::pattern({2, 2, 3, 3}, 37, 101, DType::f32), testing::pattern({2}, 5, 7, DType::f32),
      testing::pattern({2}, 3, 7, DType::f32), testing::pattern({2}, 2, 5, DType::f32),
      exp(testing::pattern({2}, 3, 5, DType::f32))};
  const std::vector<Tensor> tangents{testing::pattern({2, 2, 3, 3}, 29, 31, DType::f32)};
  GraphRunResult full = p.run(inputs, {.backward = true, .no_grad = {3, 4}}, tangents);
  GraphRunResult r = p.run(inputs, {.backward = true, .no_grad = {1, 2, 3, 4}}, tangents);
  EXPECT_TRUE(testing::allclose(r.grads.at(0), full.grads.at(0), 0.0, 0.0));
}

}  // namespace
}  // namespace aotgrad
