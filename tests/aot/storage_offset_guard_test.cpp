// Where an input starts in its storage is guarded only when the trace depends on it: batches
// sliced from one dataset tensor share one specialization (PyTorch's guards leave offsets out);
// an as_strided of an input, a metadata mutation of one, or overlapping inputs still get one
// specialization per offset, and every call matches eager.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/data.h"
#include "aotgrad/nn.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::allclose;
using ag::testing::pattern;

namespace {

TEST(StorageOffsetGuard, SlicesOfOneTensorShareASpecialization) {
  Tensor data = pattern({40, 3});
  auto fn = [](const Tensor& x, const Tensor& w) { return ag::matmul(x, w).tanh().sum(); };
  auto f = ag::aot_function(fn);
  for (int64_t i = 0; i < 10; ++i) {
    Tensor x = data.slice(0, 4 * i, 4 * i + 4);
    ASSERT_EQ(x.storage_offset(), 12 * i);
    Tensor w1 = pattern({3, 2}, 7).requires_grad_(), w2 = pattern({3, 2}, 7).requires_grad_();
    Tensor got = f(x, w1), want = fn(x, w2);
    EXPECT_TRUE(allclose(got, want, 1e-12, 1e-12)) << i;
    got.backward();
    want.backward();
    EXPECT_TRUE(allclose(w1.grad(), w2.grad(), 1e-12, 1e-12)) << i;
  }
  EXPECT_EQ(f.num_compilations(), 1u);
  EXPECT_EQ(f.stats().hits, 9u);
}

// as_strided's offset is absolute: its gradient scatters into the input at a place that depends
// on where the input starts.
TEST(StorageOffsetGuard, AsStridedOfAnInputIsGuardedPerOffset) {
  auto fn = [](const Tensor& x) { return (ag::as_strided(x, {2}, {1}, 3) * 2.0).sum(); };
  auto f = ag::aot_function(fn);
  for (int64_t start : {0, 2, 1, 2}) {
    Tensor b1 = pattern({12}).requires_grad_(), b2 = pattern({12}).requires_grad_();
    Tensor got = f(b1.slice(0, start, start + 8)), want = fn(b2.slice(0, start, start + 8));
    EXPECT_TRUE(allclose(got, want, 0, 0)) << start;
    got.backward();
    want.backward();
    EXPECT_TRUE(allclose(b1.grad(), b2.grad(), 0, 0)) << "start " << start << "\n"
                                                      << b1.grad() << "\n"
                                                      << b2.grad();
  }
  EXPECT_EQ(f.num_compilations(), 3u);
}

TEST(StorageOffsetGuard, MetadataMutationOfAnInputIsGuardedPerOffset) {
  auto fn = [](Tensor x) {
    ag::t_(x);
    return x.sum(1);
  };
  auto f = ag::aot_function(fn);
  for (int64_t row : {0, 2, 1}) {
    Tensor b1 = pattern({4, 4}), b2 = pattern({4, 4});
    Tensor x1 = b1.slice(0, row, row + 2), x2 = b2.slice(0, row, row + 2);
    Tensor got = f(x1), want = fn(x2);
    EXPECT_TRUE(allclose(got, want, 0, 0)) << row;
    EXPECT_EQ(x1.sizes(), x2.sizes());
    EXPECT_EQ(x1.strides(), x2.strides());
    EXPECT_EQ(x1.storage_offset(), x2.storage_offset()) << row;
  }
  EXPECT_EQ(f.num_compilations(), 3u);
}

TEST(StorageOffsetGuard, OverlappingInputsAreGuardedPerOffset) {
  auto fn = [](Tensor a, const Tensor& b) {
    a.mul_(2.0);
    return b + 1.0;
  };
  auto f = ag::aot_function(fn);
  for (int64_t start : {0, 1, 0}) {
    Tensor s1 = pattern({10}), s2 = pattern({10});
    Tensor got = f(s1.slice(0, start, start + 4), s1.slice(0, start + 2, start + 6));
    Tensor want = fn(s2.slice(0, start, start + 4), s2.slice(0, start + 2, start + 6));
    EXPECT_TRUE(allclose(got, want, 0, 0)) << start;
    EXPECT_TRUE(allclose(s1, s2, 0, 0)) << start;
  }
  EXPECT_EQ(f.num_compilations(), 2u);
}

// The trap of issue 17: a data loader handing out slices of one dataset tensor compiled
// aot_module once per batch. Now once for full batches (and once for the short last one).
struct Slices : ag::data::datasets::BatchDataset<Slices, ag::data::Example<>> {
  Slices(Tensor x, Tensor y) : x(std::move(x)), y(std::move(y)) {}
  ag::data::Example<> get_batch(std::vector<size_t> idx) override {
    auto lo = static_cast<int64_t>(idx.front()), hi = static_cast<int64_t>(idx.back()) + 1;
    return {x.slice(0, lo, hi), y.slice(0, lo, hi)};
  }
  std::optional<size_t> size() const override { return static_cast<size_t>(x.sizes()[0]); }
  Tensor x, y;
};

TEST(StorageOffsetGuard, TrainingOnSlicedBatchesCompilesOncePerBatchShape) {
  ag::manual_seed(5);
  auto model = std::make_shared<ag::nn::LinearImpl>(3, 1);
  auto compiled = ag::aot_module(model);
  ag::optim::SGD opt(model->parameters(), 0.05);
  Tensor x = ag::randn({50, 3});
  Tensor y = ag::matmul(x, pattern({3, 1}).to(ag::DType::f32));
  auto loader = ag::data::make_data_loader<ag::data::samplers::SequentialSampler>(
      Slices(x, y), ag::data::DataLoaderOptions().batch_size(8));
  double first = 0, last = 0;
  for (int epoch = 0; epoch < 3; ++epoch) {
    for (auto& batch : *loader) {
      opt.zero_grad();
      Tensor loss = ag::mse_loss(compiled(batch.data), batch.target);
      loss.backward();
      opt.step();
      (epoch == 0 && first == 0 ? first : last) = loss.item<float>();
    }
  }
  EXPECT_EQ(compiled.num_compilations(), 2u);  // batches of 8, and the last batch of 2
  EXPECT_LT(last, first);
}

}  // namespace
