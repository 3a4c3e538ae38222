// Artifacts (aotgrad/artifact.h, aot/artifact.h): what lower produces is plain data that
// serializes to versioned bytes and reads back exactly; instantiate builds a runtime from it that
// behaves as the compiled function did; corrupt bytes are one-line errors; the runtime holds only
// the wrappers the artifact needs; backward nodes name the forward value they came from.
// (Every scenario of tests/testing/scenario.h also runs once through its restored artifact.)
#include "aot/artifact.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "aot/runtime.h"
#include "aotgrad/aotgrad.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "testing/exactness.h"
#include "testing/gradcheck.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

Tensor leaf(const ag::IntList& sizes, uint64_t seed, bool requires_grad = true) {
  return ag::testing::test_input(sizes, -1.0, 1.0, seed, requires_grad);
}

// Bitwise equality of two tensors' values (both defined, same dtype and sizes); under a fusing
// default compiler, a few ulp (testing/exactness.h).
bool same_values(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.dtype() == b.dtype() && a.sizes() == b.sizes() &&
         ag::testing::allclose(a, b, 0.0, ag::testing::compiled_rtol());
}

// A training function that mutates its first input, returns a view of it and a reduction.
std::vector<Tensor> mutate_and_view(const Tensor& x, const Tensor& w) {
  Tensor y = x.tanh() * w;
  return {y.sum(), y.t()};
}

ag::Artifact compiled_artifact() {
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) { return mutate_and_view(x, w); });
  f(leaf({2, 3}, 1), leaf({2, 3}, 2));
  return f.artifact();
}

void expect_one_line(const std::string& what) {
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  EXPECT_LE(what.size(), 300u) << what;
  for (char c : what)
    EXPECT_TRUE(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f)
        << "a raw byte in: " << what;
}

}  // namespace

TEST(Artifact, SerializesToBytesThatReadBackExactlyAndRunTheSame) {
  ag::Artifact a = compiled_artifact();
  std::string bytes = ag::serialize_artifact(a);
  ag::Artifact b = ag::deserialize_artifact(bytes);
  EXPECT_EQ(ag::serialize_artifact(b), bytes);
  EXPECT_EQ(b.name(), a.name());
  EXPECT_EQ(b.graphs().forward, a.graphs().forward);
  EXPECT_EQ(b.graphs().backward, a.graphs().backward);
  EXPECT_EQ(b.graphs().meta, a.graphs().meta);
  EXPECT_TRUE(b.graphs().backward_descriptors == a.graphs().backward_descriptors);

  // The restored runtime against eager: outputs and gradients bit for bit.
  Tensor x1 = leaf({2, 3}, 1), w1 = leaf({2, 3}, 2), x2 = leaf({2, 3}, 1), w2 = leaf({2, 3}, 2);
  std::vector<Tensor> want = mutate_and_view(x1, w1);
  std::vector<Tensor> got = ag::instantiate(b)({x2, w2});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same_values(got[0], want[0]));
  EXPECT_TRUE(same_values(got[1], want[1]));
  EXPECT_EQ(got[1].strides(), want[1].strides());
  (want[0] + want[1].sum() * 2.0).backward();
  (got[0] + got[1].sum() * 2.0).backward();
  EXPECT_TRUE(same_values(x2.grad(), x1.grad()));
  EXPECT_TRUE(same_values(w2.grad(), w1.grad()));
}

TEST(Artifact, InferenceArtifactsRoundTripToo) {
  auto f = ag::aot_function([](const Tensor& x) { return (x * 2.0).exp(); });
  f(leaf({3}, 3, false));
  ag::Artifact a = f.artifact();
  ASSERT_TRUE(a.is_inference());
  ag::Artifact b = ag::deserialize_artifact(ag::serialize_artifact(a));
  EXPECT_TRUE(b.is_inference());
  Tensor x = leaf({3}, 3, false);
  EXPECT_TRUE(same_values(ag::instantiate(b)({x})[0], (x * 2.0).exp()));
}

TEST(Artifact, InputMutationsAreWrittenBackByTheRestoredRuntime) {
  auto f = ag::aot_function([](Tensor x) {
    x.mul_(3.0);
    return x.sum();
  });
  f(leaf({4}, 4, false));
  ag::CompiledArtifact run =
      ag::instantiate(ag::deserialize_artifact(ag::serialize_artifact(f.artifact())));
  Tensor x = leaf({4}, 4, false), want = leaf({4}, 4, false) * 3.0;
  Tensor s = run({x})[0];
  EXPECT_TRUE(same_values(x, want));
  EXPECT_TRUE(same_values(s, want.sum()));
}

TEST(Artifact, CorruptOrForeignBytesAreOneLineErrors) {
  std::string bytes = ag::serialize_artifact(compiled_artifact());
  auto expect_error = [](const std::string& b, const std::string& needle) {
    try {
      ag::deserialize_artifact(b);
      ADD_FAILURE() << "read " << b.size() << " bytes without an error";
    } catch (const ag::ArtifactError& e) {
      expect_one_line(e.what());
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error("", "artifact");
  expect_error("\x01\x02 not an artifact \xff", "artifact");
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 8) expect_error(bytes.substr(0, n), "artifact");
  std::string versioned = bytes;
  versioned[8] = static_cast<char>(versioned[8] + 1);
  expect_error(versioned, "version");
  for (size_t i = 0; i < bytes.size(); i += 1 + i / 4) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    expect_error(flipped, "artifact");
  }
}

// The artifact cache's own entries skip re-verifying and re-printing their graphs, but read back
// the same artifact, and a damaged entry is still refused (the checksum comes first).
TEST(Artifact, OwnCacheEntriesReadBackTheSameAndDamageIsStillRefused) {
  namespace aot = ag::aot;
  std::string bytes = ag::serialize_artifact(compiled_artifact());
  aot::Artifact own = aot::deserialize_artifact(bytes, aot::ArtifactSource::own_cache);
  EXPECT_EQ(aot::serialize_artifact(own), bytes);
  EXPECT_EQ(ag::graph::print_graph(own.forward),
            ag::graph::print_graph(aot::deserialize_artifact(bytes).forward));
  for (size_t i = 0; i < bytes.size(); i += 1 + i / 4) {
    std::string flipped = bytes;
    flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
    EXPECT_THROW(aot::deserialize_artifact(flipped, aot::ArtifactSource::own_cache),
                 ag::ArtifactError)
        << "byte " << i;
  }
}

TEST(Artifact, AnOwnCacheEntrysJointIsParsedWhenFirstReadAndMatchesTheCheckedOne) {
  namespace aot = ag::aot;
  std::string bytes = ag::serialize_artifact(compiled_artifact());
  const aot::Artifact own = aot::deserialize_artifact(bytes, aot::ArtifactSource::own_cache);
  const aot::Artifact copy = own;  // shares the parse
  const aot::Artifact checked = aot::deserialize_artifact(bytes);
  const std::string want = ag::graph::print_graph(checked.joint.get());
  EXPECT_EQ(ag::graph::print_graph(copy.joint.get()), want);
  EXPECT_EQ(&copy.joint.get(), &own.joint.get());
  EXPECT_NE(want.find("graph joint("), std::string::npos) << want;
  // What aot_function runs needs no joint: instantiate and call before anyone reads it.
  const aot::Artifact fresh = aot::deserialize_artifact(bytes, aot::ArtifactSource::own_cache);
  ag::CompiledArtifact run = ag::instantiate(ag::Artifact(std::make_shared<aot::Artifact>(fresh)));
  EXPECT_EQ(ag::graph::print_graph(fresh.joint.get()), want);
}

TEST(LazyGraph, ParsesOnceOnFirstReadAndRetriesAParseThatThrew) {
  namespace aot = ag::aot;
  int calls = 0;
  const std::string text = ag::graph::print_graph(compiled_artifact().data().forward);
  aot::LazyGraph lazy = aot::LazyGraph::deferred(text, [&calls](const std::string& t) {
    if (++calls == 1) throw ag::ArtifactError("joint graph: the first parse fails");
    return ag::graph::parse_graph(t);
  });
  EXPECT_EQ(calls, 0);
  EXPECT_THROW(lazy.get(), ag::ArtifactError);
  EXPECT_EQ(ag::graph::print_graph(lazy.get()), text);
  EXPECT_EQ(ag::graph::print_graph(lazy.get()), text);
  EXPECT_EQ(calls, 2);
  const aot::LazyGraph built(ag::graph::parse_graph(text));  // a graph lowering made
  EXPECT_EQ(ag::graph::print_graph(built.get()), text);
}

TEST(ConcurrencyLazyGraph, ThreadsReadingAtOnceShareOneParse) {
  namespace aot = ag::aot;
  const std::string text = ag::graph::print_graph(compiled_artifact().data().backward);
  std::atomic<int> calls{0};
  const aot::LazyGraph lazy = aot::LazyGraph::deferred(text, [&calls](const std::string& t) {
    ++calls;
    return ag::graph::parse_graph(t);
  });
  std::vector<const ag::graph::Graph*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i)
    threads.emplace_back([&, i] {
      const aot::LazyGraph copy = lazy;
      seen[i] = &copy.get();
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(calls.load(), 1);
  for (const ag::graph::Graph* g : seen) EXPECT_EQ(g, &lazy.get());
  EXPECT_EQ(ag::graph::print_graph(lazy.get()), text);
}

TEST(Artifact, ACallOutsideItsGuardsIsRefusedByName) {
  ag::CompiledArtifact run = ag::instantiate(compiled_artifact());
  try {
    run({leaf({2, 4}, 1), leaf({2, 3}, 2)});
    ADD_FAILURE() << "a [2,4] input ran on an artifact compiled for [2,3]";
  } catch (const std::invalid_argument& e) {
    expect_one_line(e.what());
    EXPECT_NE(std::string(e.what()).find("input 0 must be"), std::string::npos) << e.what();
  }
  ag::NoGradGuard no_grad;
  EXPECT_THROW(run({leaf({2, 3}, 1), leaf({2, 3}, 2)}), std::invalid_argument);
}

TEST(Artifact, ValidateRejectsIndicesOutOfRange) {
  ag::aot::Artifact a = compiled_artifact().data();
  EXPECT_NO_THROW(ag::aot::validate_artifact(a));
  a.tangent_of_output.push_back(99);
  EXPECT_THROW(ag::aot::validate_artifact(a), ag::ArtifactError);
}

TEST(Artifact, BackwardNodesNameTheForwardValueTheyCameFrom) {
  ag::Artifact a = compiled_artifact();
  const ag::aot::Artifact& d = a.data();
  ASSERT_FALSE(d.backward.nodes().empty());
  std::vector<std::string> forward_names;
  for (const auto& v : d.joint.get().values()) forward_names.push_back(v.name);
  for (const ag::graph::Node& n : d.backward.nodes()) {
    EXPECT_FALSE(n.origin.empty()) << "a backward node without an origin";
    EXPECT_NE(std::find(forward_names.begin(), forward_names.end(), n.origin), forward_names.end())
        << n.origin;
  }
  for (const ag::graph::Node& n : d.forward.nodes()) EXPECT_TRUE(n.origin.empty());
  EXPECT_NE(a.graphs().backward.find("  # from %tanh"), std::string::npos) << a.graphs().backward;
  // Kept through serialization.
  ag::Artifact b = ag::deserialize_artifact(ag::serialize_artifact(a));
  for (size_t i = 0; i < d.backward.nodes().size(); ++i)
    EXPECT_EQ(b.data().backward.nodes()[i].origin, d.backward.nodes()[i].origin);
}

// ---- the runtime: wrappers built once, only those needed ----

namespace {

std::vector<std::string> wrappers_of(const ag::Artifact& a) {
  return ag::aot::instantiate(a.data(), ag::aot::named_compilers(ag::AotConfig{}))->describe();
}

}  // namespace

TEST(RuntimeWrappers, APlainFunctionNeedsOnlyTheOutputsAndTheBody) {
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) { return (x * w).sum(); });
  f(leaf({3}, 1), leaf({3}, 2));
  EXPECT_EQ(wrappers_of(f.artifact()),
            (std::vector<std::string>{"AliasedOutputs", "AutogradBody"}));
  ag::NoGradGuard no_grad;
  f(leaf({3}, 1), leaf({3}, 2));
  EXPECT_EQ(wrappers_of(f.artifact()),
            (std::vector<std::string>{"AliasedOutputs", "InferenceBody"}));
}

TEST(RuntimeWrappers, RepeatedOverlappingAndMutatedInputsAddTheirWrappers) {
  auto f = ag::aot_function([](Tensor a, const Tensor& b, Tensor c) {
    c.add_(1.0);
    return a * b;
  });
  Tensor base = leaf({4}, 5, false), x = leaf({4}, 6, false);
  f(base.slice(0, 0, 2), base.slice(0, 2, 4), x);
  EXPECT_EQ(wrappers_of(f.artifact()),
            (std::vector<std::string>{"AliasedOutputs", "MutationEpilogue", "InferenceBody"}));
  f(x, x, base);
  EXPECT_EQ(
      wrappers_of(f.artifact()),
      (std::vector<std::string>{"Dedupe", "AliasedOutputs", "MutationEpilogue", "InferenceBody"}));
  f(base.slice(0, 0, 3), x.slice(0, 0, 3), base.slice(0, 1, 4));
  EXPECT_EQ(wrappers_of(f.artifact()),
            (std::vector<std::string>{"SyntheticBases", "AliasedOutputs", "MutationEpilogue",
                                      "InferenceBody"}));
}
