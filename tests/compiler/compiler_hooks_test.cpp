// The hooks of AotConfig (aotgrad/aot.h, aotgrad/compiler.h): fw/bw/inference compiler callables
// see the right graphs with their descriptors and may free their boxed inputs; partition_fn may
// wrap the built-in partitioners and a result that does not line up is one clear error;
// register_compiler makes a compiler selectable by name; decompositions replace ops while tracing.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::Tensor;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

std::string join(const std::vector<ag::Descriptor>& ds) {
  std::string s;
  for (const ag::Descriptor& d : ds) s += (s.empty() ? "" : " ") + d.to_string();
  return s;
}

// What a recording compiler saw, shared with the test (compilers may run on any thread).
struct Seen {
  std::mutex mutex;
  std::vector<std::string> calls;  // "fw:forward inputs=... outputs=..."
};

ag::CompilerFn recording(std::shared_ptr<Seen> seen, std::string tag) {
  return [seen, tag](const ag::GraphView& g) {
    std::lock_guard lock(seen->mutex);
    ag::GraphDescriptors d = g.descriptors();
    seen->calls.push_back(tag + ":" + g.name() + " (" + join(d.inputs) + ") -> (" +
                          join(d.outputs) + ")");
    return ag::compile_with("interpreter", g);
  };
}

Tensor leaf(const ag::IntList& sizes, uint64_t seed, bool requires_grad = true) {
  return ag::testing::test_input(sizes, -1.0, 1.0, seed, requires_grad);
}

Tensor loss_fn(const Tensor& x, const Tensor& w) {
  return (x * w).tanh().sum();
}

TEST(CompilerHooks, FwBwAndInferenceCompilersSeeTheirGraphs) {
  auto seen = std::make_shared<Seen>();
  ag::AotConfig cfg;
  cfg.fw_compiler_fn = recording(seen, "fw");
  cfg.bw_compiler_fn = recording(seen, "bw");
  cfg.inference_compiler_fn = recording(seen, "inf");
  auto f = ag::aot_function(loss_fn, cfg);
  Tensor x = leaf({3}, 1), w = leaf({3}, 2);
  Tensor loss = f(x, w);
  loss.backward();
  {
    ag::NoGradGuard no_grad;
    f(x, w);
  }
  ASSERT_EQ(seen->calls.size(), 3u);
  EXPECT_EQ(seen->calls[0],
            "fw:forward (input(0) input(1)) -> (output(0) saved(0) saved(1) saved(2))");
  EXPECT_EQ(seen->calls[1],
            "bw:backward (saved(0) saved(1) saved(2) tangent(output(0))) -> "
            "(grad(input(0)) grad(input(1)))");
  EXPECT_EQ(seen->calls[2], "inf:inference (input(0) input(1)) -> (output(0))");
  Tensor xe = x.detach().requires_grad_(), we = w.detach().requires_grad_();
  Tensor eager = loss_fn(xe, we);
  eager.backward();
  EXPECT_TRUE(ag::testing::allclose(loss, eager, 0, 0));
  EXPECT_TRUE(ag::testing::allclose(x.grad(), xe.grad(), 0, 0));
}

TEST(CompilerHooks, BwAndInferenceDefaultToTheForwardCallable) {
  auto seen = std::make_shared<Seen>();
  ag::AotConfig cfg;
  cfg.fw_compiler_fn = recording(seen, "fw");
  auto f = ag::aot_function(loss_fn, cfg);
  f(leaf({3}, 1), leaf({3}, 2)).backward();
  ag::NoGradGuard no_grad;
  f(leaf({3}, 1), leaf({3}, 2));
  ASSERT_EQ(seen->calls.size(), 3u);
  EXPECT_EQ(seen->calls[1].substr(0, 12), "fw:backward ");
  EXPECT_EQ(seen->calls[2].substr(0, 13), "fw:inference ");
}

// A boxed compiled graph owns its inputs: it may clear the vector before running, and each input
// it drops is released (here, the caller's vector held the only other reference).
TEST(CompilerHooks, BoxedInputsMayBeClearedByTheCallee) {
  auto sizes_seen = std::make_shared<std::vector<size_t>>();
  auto mutex = std::make_shared<std::mutex>();
  ag::AotConfig cfg;
  cfg.fw_compiler_fn = [sizes_seen, mutex](const ag::GraphView& g) -> ag::CompiledGraphFn {
    ag::CompiledGraphFn run = ag::compile_with("interpreter", g);
    return [run, sizes_seen, mutex](std::vector<Tensor>&& inputs) {
      std::vector<Tensor> mine = std::move(inputs);
      inputs.clear();
      {
        std::lock_guard lock(*mutex);
        sizes_seen->push_back(mine.size());
      }
      return run(std::move(mine));
    };
  };
  auto f = ag::aot_function(loss_fn, cfg);
  Tensor x = leaf({4}, 5), w = leaf({4}, 6);
  Tensor loss = f(x, w);
  loss.backward();
  Tensor xe = x.detach().requires_grad_(), we = w.detach().requires_grad_();
  Tensor eager = loss_fn(xe, we);
  eager.backward();
  EXPECT_EQ(*sizes_seen, (std::vector<size_t>{2, 4}));  // forward: x, w; backward: 3 saved + 1
  EXPECT_TRUE(ag::testing::allclose(loss, eager, 0, 0));
  EXPECT_TRUE(ag::testing::allclose(w.grad(), we.grad(), 0, 0));
}

TEST(CompilerHooks, PartitionFnWrappingMinCutMatchesThePartitionerByName) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  ag::AotConfig cfg;
  cfg.partition_fn = [calls](const ag::GraphView& joint, const ag::JointInfo& info) {
    ++*calls;
    EXPECT_EQ(joint.name(), "joint");
    EXPECT_EQ(info.num_primals, 2u);
    EXPECT_EQ(info.num_fw_outputs, 1u);
    return ag::min_cut_rematerialization_partition(joint, info);
  };
  auto fn = [](const Tensor& x, const Tensor& w) { return (x.mm(w).tanh() * 3.0).exp().sum(); };
  auto wrapped = ag::aot_function(fn, cfg);
  ag::AotConfig by_name;
  by_name.partitioner = "min_cut";
  auto named = ag::aot_function(fn, by_name);
  Tensor x = leaf({3, 4}, 7), w = leaf({4, 5}, 8);
  Tensor a = wrapped(x, w), b = named(x.detach().requires_grad_(), w.detach().requires_grad_());
  a.backward();
  EXPECT_EQ(*calls, 1);
  ag::CompiledGraphs ga = wrapped.graphs(), gb = named.graphs();
  EXPECT_EQ(ga.forward, gb.forward);
  EXPECT_EQ(ga.backward, gb.backward);
  EXPECT_EQ(ga.saved_report, gb.saved_report);
  EXPECT_TRUE(ag::testing::allclose(a, b, 0, 0));
}

// A partition_fn that swaps its graphs, or returns the forward twice, is told in one line.
TEST(CompilerHooks, PartitionFnResultThatDoesNotLineUpIsOneClearError) {
  ag::AotConfig cfg;
  cfg.name = "step";
  cfg.partition_fn = [](const ag::GraphView& joint, const ag::JointInfo& info) {
    ag::PartitionedGraphs p = ag::default_partition(joint, info);
    std::swap(p.forward, p.backward);
    return p;
  };
  auto f = ag::aot_function(loss_fn, cfg);
  std::string msg = error_of([&] { f(leaf({3}, 1), leaf({3}, 2)); });
  EXPECT_NE(msg.find("step: AotConfig::partition_fn returned graphs that do not line up with the "
                     "joint graph: the forward graph takes 4 inputs, expected 2 primals"),
            std::string::npos)
      << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);

  cfg.partition_fn = [](const ag::GraphView& joint, const ag::JointInfo& info) {
    ag::PartitionedGraphs p = ag::default_partition(joint, info);
    ag::GraphBuilder b(p.backward);
    b.set_outputs({b.add_node("aten.sum.default", {p.backward.output(0).ref()})[0],
                   p.backward.output(1).ref()});
    p.backward = b.build();
    return p;
  };
  auto g = ag::aot_function(loss_fn, cfg);
  msg = error_of([&] { g(leaf({3}, 1), leaf({3}, 2)); });
  EXPECT_NE(msg.find("gradient 0 is f64[], the joint graph's is f64[3]"), std::string::npos) << msg;
}

TEST(CompilerHooks, RegisteredCompilerIsSelectedByName) {
  auto count = std::make_shared<std::atomic<int>>(0);
  ag::register_compiler("hooks_test_counting", [count](const ag::GraphView& g) {
    ++*count;
    return ag::compile_with("interpreter", g);
  });
  std::vector<std::string> names = ag::compiler_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "interpreter"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "hooks_test_counting"), names.end());
  ag::AotConfig cfg;
  cfg.fw_compiler = "hooks_test_counting";
  auto f = ag::aot_function(loss_fn, cfg);
  Tensor x = leaf({3}, 1), w = leaf({3}, 2);
  f(x, w).backward();
  EXPECT_EQ(*count, 2);  // forward and backward (bw_compiler defaults to fw_compiler)
  // instantiate(artifact) finds it by the name the artifact records.
  ag::CompiledArtifact again = ag::instantiate(f.artifact());
  EXPECT_EQ(*count, 4);
  EXPECT_TRUE(ag::testing::allclose(again({x, w}).at(0), loss_fn(x, w), 0, 0));
}

TEST(CompilerHooks, UnknownOrEmptyCompilerNamesAreClearErrors) {
  ag::AotConfig cfg;
  cfg.fw_compiler = "no_such_compiler";
  std::string msg = error_of([&] { ag::aot_function(loss_fn, cfg)(leaf({3}, 1), leaf({3}, 2)); });
  EXPECT_NE(msg.find("unknown compiler 'no_such_compiler' (known: "), std::string::npos) << msg;
  EXPECT_NE(msg.find("interpreter"), std::string::npos) << msg;
  EXPECT_NE(error_of([] {
              ag::register_compiler("", ag::registered_compiler("interpreter"));
            }).find("register_compiler: the name is empty"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              ag::register_compiler("x", ag::CompilerFn());
            }).find("no compiler function given for 'x'"),
            std::string::npos);
}

// Registering and looking up from several threads at once (run under TSan by scripts/test).
TEST(ConcurrencyCompilerRegistry, RegisterAndLookUpFromManyThreads) {
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      for (int i = 0; i < 20; ++i) {
        ag::register_compiler("concurrency_" + std::to_string(t), [](const ag::GraphView& g) {
          return ag::compile_with("interpreter", g);
        });
        EXPECT_TRUE(static_cast<bool>(ag::registered_compiler("interpreter")));
        EXPECT_GE(ag::compiler_names().size(), 2u);
      }
    });
  for (std::thread& th : threads) th.join();
  std::vector<std::string> names = ag::compiler_names();
  for (int t = 0; t < 4; ++t)
    EXPECT_NE(std::find(names.begin(), names.end(), "concurrency_" + std::to_string(t)),
              names.end());
}

// gelu(x, "tanh") written with the ops its formula uses.
std::vector<Tensor> gelu_tanh(const std::vector<ag::OpArg>& args) {
  const Tensor& x = std::get<Tensor>(args.at(0));
  EXPECT_EQ(std::get<std::string>(args.at(1)), "tanh");
  constexpr double kSqrt2OverPi = 0.7978845608028654;
  Tensor inner = (x + x * x * x * 0.044715) * kSqrt2OverPi;
  return {x * 0.5 * (inner.tanh() + 1.0)};
}

// addmm(self, m1, m2, beta, alpha) = beta * self + alpha * (m1 @ m2).
std::vector<Tensor> addmm_as_mm(const std::vector<ag::OpArg>& args) {
  const Tensor& self = std::get<Tensor>(args.at(0));
  Tensor prod = ag::mm(std::get<Tensor>(args.at(1)), std::get<Tensor>(args.at(2)));
  return {self * std::get<ag::Scalar>(args.at(3)) + prod * std::get<ag::Scalar>(args.at(4))};
}

TEST(Decompositions, ReplaceOpsWhileTracingAndMatchEager) {
  auto fn = [](const Tensor& x, const Tensor& w, const Tensor& b) {
    return ag::gelu(ag::linear(x, w, b), "tanh").sum();
  };
  ag::AotConfig cfg;
  cfg.decompositions["aten.gelu.default"] = gelu_tanh;
  cfg.decompositions["aten.addmm.default"] = addmm_as_mm;
  auto plain = ag::aot_function(fn);
  auto decomposed = ag::aot_function(fn, cfg);
  Tensor x = leaf({4, 3}, 1), w = leaf({5, 3}, 2), b = leaf({5}, 3);
  Tensor x2 = x.detach().requires_grad_(), w2 = w.detach().requires_grad_();
  Tensor b2 = b.detach().requires_grad_();
  Tensor xe = x.detach().requires_grad_(), we = w.detach().requires_grad_();
  Tensor be = b.detach().requires_grad_();
  plain(x, w, b).backward();
  Tensor out = decomposed(x2, w2, b2);
  out.backward();
  Tensor eager = fn(xe, we, be);
  eager.backward();
  std::string before = plain.graphs().forward, after = decomposed.graphs().forward;
  EXPECT_NE(before.find("aten.gelu.default"), std::string::npos);
  EXPECT_NE(before.find("aten.addmm.default"), std::string::npos);
  EXPECT_EQ(after.find("aten.gelu.default"), std::string::npos) << after;
  EXPECT_EQ(after.find("aten.addmm.default"), std::string::npos) << after;
  EXPECT_NE(after.find("aten.tanh.default"), std::string::npos) << after;
  EXPECT_NE(after.find("aten.mm.default"), std::string::npos) << after;
  EXPECT_EQ(decomposed.graphs().backward.find("aten.gelu_backward"), std::string::npos);
  EXPECT_TRUE(ag::testing::allclose(out, eager, 1e-5, 1e-5));
  EXPECT_TRUE(ag::testing::allclose(x2.grad(), xe.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(ag::testing::allclose(w2.grad(), we.grad(), 1e-5, 1e-5));
  EXPECT_TRUE(ag::testing::allclose(b2.grad(), be.grad(), 1e-5, 1e-5));
}

TEST(Decompositions, MayCallTheOpTheyReplaceAndAreChecked) {
  ag::AotConfig cfg;
  // relu(x) = relu(x) + 0: the inner relu is recorded, not decomposed again.
  cfg.decompositions["aten.relu.default"] = [](const std::vector<ag::OpArg>& a) {
    return std::vector<Tensor>{ag::relu(std::get<Tensor>(a[0])) + 0.0};
  };
  auto f = ag::aot_function([](const Tensor& x) { return ag::relu(x); }, cfg);
  Tensor x = leaf({3}, 4, false);
  EXPECT_TRUE(ag::testing::allclose(f(x), ag::relu(x), 0, 0));
  EXPECT_NE(f.graphs().inference.find("aten.relu.default"), std::string::npos);
  EXPECT_NE(f.graphs().inference.find("aten.add."), std::string::npos);

  cfg.decompositions["aten.relu.default"] = [](const std::vector<ag::OpArg>& a) {
    return std::vector<Tensor>{std::get<Tensor>(a[0]).sum()};
  };
  auto g = ag::aot_function([](const Tensor& x) { return ag::relu(x); }, cfg);
  std::string msg = error_of([&] { g(x); });
  EXPECT_NE(msg.find("the decomposition of aten.relu.default returned f64[] as result 0, the op "
                     "returns f64[3]"),
            std::string::npos)
      << msg;
}

}  // namespace
