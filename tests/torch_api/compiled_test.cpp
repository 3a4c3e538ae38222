// The LibTorch-spelled compositions and the u8 / i32 dtypes under aot_function: compiled results
// and gradients equal eager ones (the harness of testing/compare.h).
#include <gtest/gtest.h>

#include "aotgrad/torch.h"
#include "testing/compare.h"

namespace aotgrad {
namespace {

using namespace torch::indexing;
using testing::test_input;

TEST(TorchApiCompiled, IndexNormAndCompoundAssignment) {
  auto fn = [](const Tensor& x) {
    Tensor y =
        x.index({Slice(1, None), None, Ellipsis, from_vector(std::vector<int64_t>{2, 0}, {2})});
    y *= 2;
    y -= x.index({0, Slice(None, 2)});
    return y.norm(2, 0) + x.squeeze().all().to(x.dtype());
  };
  testing::expect_compiled_matches_eager(fn, testing::inputs(test_input({3, 4}, 0.5, 1.5, 71)));
}

TEST(TorchApiCompiled, ByteAndIntArithmetic) {
  auto fn = [](const Tensor& x) {
    Tensor u = (x * 10).to(torch::kByte), i = (x * -7).to(torch::kInt);
    Tensor mixed = (u + i) * 3;  // i32
    return x * mixed.to(x.dtype()) + u.argmax().to(x.dtype());
  };
  testing::expect_compiled_matches_eager(fn, testing::inputs(test_input({5}, 0.5, 20.0, 72)));
}

}  // namespace
}  // namespace aotgrad
