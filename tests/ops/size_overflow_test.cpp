// Sizes that overflow int64, at the op level (issue 10, item 4): each case the issue names gave a
// wrong result or crashed, and now raises std::invalid_argument naming the op and the shape.
// The boundary cases run under the Trace interpreter, so shapes up to the int64 limit are checked
// by the meta functions without allocating anything.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "graph/graph.h"
#include "graph/verifier.h"
#include "ops/op.h"
#include "testing/values.h"
#include "trace/tracer.h"

namespace aotgrad {
namespace {

using testing::contains;
using testing::error_of;
using testing::iota;

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t k2to31 = int64_t{1} << 31;
constexpr int64_t k2to32 = int64_t{1} << 32;
constexpr int64_t k2to62 = int64_t{1} << 62;

std::string invalid(const std::function<void()>& f) {
  return error_of<std::invalid_argument>(f);
}

// ---- factories ----

TEST(SizeOverflowOps, OnesOfTwoToThe62ElementsNamesOpAndShape) {
  // On main: numel x 4 bytes wrapped to 0, and the fill wrote through a 0-byte buffer (SIGSEGV).
  EXPECT_EQ(invalid([] {
              ones({k2to31, k2to31});
            }),
            "aten.ones.default: shape [2147483648, 2147483648] has 4611686018427387904 elements "
            "of 4 bytes: the byte size overflows int64; use a smaller shape");
}

TEST(SizeOverflowOps, EveryFactoryRefusesAnOverflowingShape) {
  const IntList huge{k2to32, k2to32};  // the element count itself overflows
  auto count_error = [](const std::string& op) {
    return op +
           ": shape [4294967296, 4294967296] has more than 9223372036854775807 elements: "
           "the element count overflows int64; use a smaller shape";
  };
  EXPECT_EQ(invalid([&] { empty(huge); }), count_error("aten.empty.memory_format"));
  EXPECT_EQ(invalid([&] { zeros(huge); }), count_error("aten.zeros.default"));
  EXPECT_EQ(invalid([&] { full(huge, 2.0); }), count_error("aten.full.default"));
  EXPECT_TRUE(contains(invalid([&] { rand(huge); }), "shape [4294967296, 4294967296] has more"));
  EXPECT_TRUE(contains(invalid([&] { randn(huge); }), "shape [4294967296, 4294967296] has more"));
  // Negative sizes are refused with a named message too.
  EXPECT_EQ(invalid([] {
              zeros({2, -3});
            }),
            "aten.zeros.default: argument 'size' [2, -3] has a negative dimension");
}

TEST(SizeOverflowOps, IntegerArangeWiderThanInt64IsRefused) {
  // On main end - start wrapped (2^62 - (-2^62) = 2^63) and arange returned an empty tensor.
  std::string err = invalid([] { arange(Scalar(-k2to62), Scalar(k2to62)); });
  EXPECT_EQ(err,
            "aten.arange.start_step: the range from -4611686018427387904 to 4611686018427387904 by "
            "step 1 holds more than 9223372036854775807 elements: the element count overflows "
            "int64; use a smaller range");
  // Near the edges, ranges that fit still count exactly.
  EXPECT_EQ(arange(Scalar(kMax - 3), Scalar(kMax)).to_vector<int64_t>(),
            (std::vector<int64_t>{kMax - 3, kMax - 2, kMax - 1}));
}

// ---- views ----

TEST(SizeOverflowOps, ExpandPastInt64IsRefusedInsteadOfSummingToZero) {
  // On main numel wrapped to 0: expand "succeeded" and sum() returned 0.0.
  Tensor one = ones({1});
  EXPECT_EQ(invalid([&] {
              one.expand({k2to32, k2to32}).sum();
            }),
            "aten.expand.default: shape [4294967296, 4294967296] has more than "
            "9223372036854775807 elements: the element count overflows int64; use a smaller shape");
  // An expand that fits is a view of one element with the exact count.
  Tensor e = one.expand({k2to31, k2to31});
  EXPECT_EQ(e.numel(), k2to62);
  EXPECT_EQ(e.strides(), (IntList{0, 0}));
}

TEST(SizeOverflowOps, ViewToAShapeWhoseCountWrapsIsRefused) {
  // On main [2^32, 2^32] "held" 2^64 mod 2^64 = 0 elements, so viewing an empty tensor as it
  // succeeded with numel() 0.
  Tensor e = empty({0});
  EXPECT_TRUE(contains(invalid([&] {
                         e.view({k2to32, k2to32});
                       }),
                       "shape [4294967296, 4294967296] is invalid for input of size 0"));
  EXPECT_TRUE(contains(invalid([&] {
                         e.reshape({k2to32, k2to32});
                       }),
                       "is invalid for input of size 0"));
  // A 0 among huge sizes really is empty.
  EXPECT_EQ(e.view({k2to32, 0, k2to32}).numel(), 0);
}

TEST(SizeOverflowOps, AsStridedWithHugeStridesCannotWrapPastTheBoundsCheck) {
  // On main the extent 1 + (2 - 1) x INT64_MAX wrapped negative, passed "needed <= available",
  // and element 1 was read from 2^63 x 4 bytes away.
  Tensor x = iota({4});
  EXPECT_EQ(invalid([&] { as_strided(x, {2}, {kMax}); }),
            "aten.as_strided.default: a view of shape [2], strides [9223372036854775807] and "
            "storage offset 0 reaches element offset 9223372036854775807, whose end in bytes "
            "((offset + 1) x 1) overflows int64; use smaller sizes or strides");
  EXPECT_TRUE(contains(invalid([&] {
                         as_strided(x, {2, 2}, {k2to62, k2to62});
                       }),
                       "reaches element offsets beyond int64"));
  // In bounds and huge-but-fitting strides on a size-1 dim are fine.
  EXPECT_EQ(as_strided(x, {1, 2}, {kMax, 3}).to_vector<float>(), (std::vector<float>{0, 3}));
}

TEST(SizeOverflowOps, SliceWithAHugeStepKeepsItsValues) {
  // On main the length's ceil-division (10 + INT64_MAX - 1) wrapped and the slice came out
  // empty; as in PyTorch it is x[0].
  Tensor x = iota({10});
  Tensor s = slice(x, 0, 0, 10, kMax);
  EXPECT_EQ(s.sizes(), IntList{1});
  EXPECT_EQ(s.to_vector<float>(), std::vector<float>{0});
}

// ---- joining ----

TEST(SizeOverflowOps, CatWhoseTotalSizeWrapsIsRefused) {
  // Four expanded [2^62] views: on main the total wrapped to 0 and cat returned an empty tensor.
  Tensor piece = ones({1}).expand({k2to62});
  std::string err = invalid([&] { cat({piece, piece, piece, piece}); });
  EXPECT_EQ(err,
            "aten.cat.default: the sizes of the tensors along dim 0 add up past int64 at tensor 1 "
            "(shape [4611686018427387904]); concatenate fewer or smaller tensors");
}

TEST(SizeOverflowOps, StackWhoseCountOverflowsIsRefused) {
  Tensor piece = ones({1}).expand({k2to62});
  EXPECT_TRUE(contains(invalid([&] {
                         stack({piece, piece});
                       }),
                       "aten.stack.default: shape [2, 4611686018427387904] has more than"));
}

TEST(SizeOverflowOps, SplitSizesSummingPastInt64AreRefused) {
  // On main INT64_MAX + INT64_MAX + 3 wrapped to 1, matched a size-1 dim, and split returned
  // views of INT64_MAX elements over a one-element storage.
  Tensor x = ones({1}, DType::b8);
  EXPECT_TRUE(contains(invalid([&] {
                         split_with_sizes(x, {kMax, kMax, 3});
                       }),
                       "aten.split_with_sizes.default: split_sizes [9223372036854775807, "
                       "9223372036854775807, 3] sum past int64"));
  // A huge split size leaves one piece (its ceil-division used to wrap).
  std::vector<Tensor> pieces = split(iota({5}), kMax);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].sizes(), IntList{5});
  EXPECT_EQ(chunk(iota({5}), kMax).size(), 5u);
}

// ---- convolution and pooling ----

TEST(SizeOverflowOps, ConvolutionWithPaddingPastInt64IsRefused) {
  Tensor input = ones({1, 1, 4, 4}), weight = ones({1, 1, 3, 3});
  std::string err = invalid([&] { conv2d(input, weight, Tensor(), {1}, {k2to62}); });
  EXPECT_TRUE(contains(err,
                       "padding 4611686018427387904 or dilation 1 along spatial dim 0 makes "
                       "the padded input or the dilated kernel overflow int64"))
      << err;
  err = invalid([&] { conv2d(input, weight, Tensor(), {1}, {0}, {k2to62}); });
  EXPECT_TRUE(contains(err, "dilation 4611686018427387904")) << err;
}

TEST(SizeOverflowOps, MaxPoolWithHugeDilationIsRefusedNotWrapped) {
  // On main dilation x (kernel - 1) wrapped to -2: a 6x6 output of a 4x4 input, read out of
  // bounds.
  Tensor x = ones({1, 1, 4, 4});
  std::string err = invalid([&] { max_pool2d(x, {3}, {1}, {0}, {kMax}); });
  EXPECT_TRUE(contains(err, "the output size is too small")) << err;
}

// ---- meta functions at the boundary, under the tracer (nothing is allocated) ----

struct Traced {
  graph::Graph graph{"traced"};
  std::string error;
};

// Traces `fn` on a fake [1] f32 input; the error message if tracing threw.
void trace(Traced& t, const std::function<void(const Tensor&)>& fn) {
  Tensor example = ones({1});
  trace::Tracer tracer(t.graph);
  ops::InterpreterGuard guard(tracer);
  Tensor x = tracer.add_input(example, "x");
  try {
    fn(x);
  } catch (const std::invalid_argument& e) {
    t.error = e.what();
  }
}

const ops::TensorMeta& output_meta(const graph::Graph& g, std::string_view op) {
  for (const graph::Node& n : g.nodes())
    if (n.op->name == op) return g.value(n.outputs.at(0)).meta;
  throw std::logic_error("no " + std::string(op) + " node");
}

TEST(SizeOverflowMeta, TracedExpandTo2To62ThenSumHasExactMetas) {
  Traced t;
  trace(t, [](const Tensor& x) { x.expand({k2to31, k2to31}).sum(); });
  ASSERT_EQ(t.error, "");
  const ops::TensorMeta& e = output_meta(t.graph, "aten.expand.default");
  EXPECT_EQ(e.sizes, (IntList{k2to31, k2to31}));
  EXPECT_EQ(e.strides, (IntList{0, 0}));
  EXPECT_EQ(output_meta(t.graph, "aten.sum.default").sizes, IntList{});
  // The verifier rebuilds fake inputs from the recorded metas: a 2^62-element view is one.
  EXPECT_NO_THROW(graph::verify_graph(t.graph));
}

TEST(SizeOverflowMeta, LargestResultsThatFitAreAcceptedAndOneMoreIsRefused) {
  Traced fits;
  trace(fits, [](const Tensor& x) {
    ones({(int64_t{1} << 61) - 1});               // f32: 2^63 - 4 bytes
    zeros({(int64_t{1} << 60) - 1}, DType::f64);  // f64: 2^63 - 8 bytes
    empty({kMax}, DType::b8);                     // b8: 2^63 - 1 bytes
    x.expand({int64_t{1} << 40}).neg();           // a 2^40-element result from a view
    Tensor b = x.to(DType::b8);                   // sizes adding up to exactly INT64_MAX
    cat({b.expand({kMax / 2}), b.expand({kMax / 2}), b});
  });
  ASSERT_EQ(fits.error, "");
  EXPECT_EQ(output_meta(fits.graph, "aten.ones.default").sizes, IntList{(int64_t{1} << 61) - 1});
  EXPECT_EQ(output_meta(fits.graph, "aten.empty.memory_format").sizes, IntList{kMax});
  EXPECT_EQ(output_meta(fits.graph, "aten.neg.default").sizes, IntList{int64_t{1} << 40});
  EXPECT_EQ(output_meta(fits.graph, "aten.cat.default").sizes, IntList{kMax});

  Traced refused;
  trace(refused, [](const Tensor&) { ones({int64_t{1} << 61}); });
  EXPECT_TRUE(contains(refused.error,
                       "shape [2305843009213693952] has 2305843009213693952 "
                       "elements of 4 bytes: the byte size overflows int64"))
      << refused.error;
  Traced refused_view;
  trace(refused_view, [](const Tensor& x) { x.expand({k2to62}).neg(); });
  EXPECT_TRUE(contains(refused_view.error,
                       "aten.neg.default: shape [4611686018427387904] has "
                       "4611686018427387904 elements of 4 bytes"))
      << refused_view.error;
}

// ---- out of memory inside a compiled function names the op ----

bool malloc_failure_returns_null() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  for (const char* var : {"ASAN_OPTIONS", "TSAN_OPTIONS"}) {
    const char* v = std::getenv(var);
    if (v && contains(v, "allocator_may_return_null=1")) return true;
  }
  return false;
#else
  return true;
#endif
}

TEST(SizeOverflowOps, OutOfMemoryInACompiledFunctionNamesTheOp) {
  if (!malloc_failure_returns_null()) GTEST_SKIP() << "the sanitizer would abort on 1 PiB";
  auto f = aot_function([](const Tensor& x) {
    return mm(x.expand({int64_t{1} << 24, 1}), x.expand({1, int64_t{1} << 24}));
  });
  std::string err = error_of<OutOfMemoryError>([&] { f(ones({1, 1})); });
  EXPECT_EQ(err,
            "out of memory: aten.mm.default asked for 1125899906842624 bytes (1.0 PiB) for the "
            "f32[16777216, 16777216] result; free memory or use smaller shapes");
}

}  // namespace
}  // namespace aotgrad
