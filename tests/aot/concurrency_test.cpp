// The concurrency contract (include/aotgrad/aot.h, "Concurrency"): compiled functions,
// GraphProgram, aot_module and the interpreter's callables called from 4 threads at once give
// results (outputs and gradients) bit-identical to a one-thread run, a key compiles once, and a
// recompile never disturbs calls in flight. Suites are named Concurrency* because the tsan test
// preset runs exactly those under ThreadSanitizer; keep them small and fast.
#include <gtest/gtest.h>

#include <atomic>
#include <barrier>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "aotgrad/graph_program.h"
#include "aotgrad/nn.h"
#include "backends/interpreter.h"
#include "graph/parser.h"
#include "testing/gradcheck.h"
#include "testing/values.h"

namespace ag = aotgrad;
namespace nn = aotgrad::nn;
using ag::Tensor;
using ag::testing::pattern;

namespace {

constexpr int kThreads = 4;

// The dtype, sizes and raw bytes (in logical order) of `t`: equal strings mean bit-identical.
std::string bytes_of(const Tensor& t) {
  if (!t.defined()) return "undefined";
  Tensor c = t.detach().contiguous();
  std::string s = std::string(ag::dtype_name(c.dtype())) + ag::shape_to_string(c.sizes()) + ":";
  s.append(c.impl()->data_bytes(), static_cast<size_t>(c.numel()) * ag::itemsize(c.dtype()));
  return s;
}

std::string bytes_of(const std::vector<Tensor>& ts) {
  std::string s;
  for (const Tensor& t : ts) s += bytes_of(t) + "|";
  return s;
}

// Runs body(thread) on kThreads threads released together; every exception fails the test.
void run_together(const std::function<void(int)>& body, int threads = kThreads) {
  std::barrier start(threads);
  std::vector<std::string> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      start.arrive_and_wait();
      try {
        body(t);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(t)] = e.what();
      }
    });
  for (std::thread& th : pool) th.join();
  for (int t = 0; t < threads; ++t) EXPECT_EQ(errors[static_cast<size_t>(t)], "") << "thread " << t;
}

// Two layers and two outputs: saved values, several kernels and a tuple result.
std::tuple<Tensor, Tensor> mlp(const Tensor& x, const Tensor& w1, const Tensor& w2) {
  Tensor y = ag::mm(ag::mm(x, w1).tanh(), w2).sigmoid();
  return {y, (y * y).sum()};
}

// A distinct input for every (thread, call), `rows` rows of 8.
Tensor input_for(int thread, int call, int64_t rows = 32) {
  return pattern({rows, 8}, 3 + 2 * thread + 7 * call, 89 + thread);
}

struct Weights {
  Tensor w1 = pattern({8, 16}, 13, 97), w2 = pattern({16, 4}, 29, 83);
};

// One training call on fresh leaves: outputs, then the gradients of x, w1 and w2.
template <typename F>
std::string train_step(const F& f, const Tensor& x0, const Weights& w) {
  Tensor x = x0.detach().requires_grad_();
  Tensor w1 = w.w1.detach().clone().requires_grad_(), w2 = w.w2.detach().clone().requires_grad_();
  auto [y, s] = f(x, w1, w2);
  (s + (y * x0.sum()).sum()).backward();
  return bytes_of({y, s, x.grad(), w1.grad(), w2.grad()});
}

}  // namespace

TEST(ConcurrencyAotFunction, InferenceFromFourThreadsMatchesOneThread) {
  constexpr int kCalls = 100;
  Weights w;
  auto reference = ag::aot_function(mlp);
  std::map<std::pair<int, int>, std::string> want;
  {
    ag::NoGradGuard no_grad;
    for (int t = 0; t < kThreads; ++t)
      for (int i = 0; i < kCalls; ++i) {
        auto [y, s] = reference(input_for(t, i), w.w1, w.w2);
        want[{t, i}] = bytes_of({y, s});
      }
  }
  auto f = ag::aot_function(mlp);
  std::vector<std::vector<std::string>> got(kThreads, std::vector<std::string>(kCalls));
  run_together([&](int t) {
    ag::NoGradGuard no_grad;  // grad mode is per thread
    for (int i = 0; i < kCalls; ++i) {
      auto [y, s] = f(input_for(t, i), w.w1, w.w2);
      got[t][i] = bytes_of({y, s});
    }
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) EXPECT_EQ(got[t][i], (want[std::pair{t, i}])) << t << "," << i;
  EXPECT_TRUE(f.graphs().is_inference);
  ag::CacheStats st = f.stats();
  EXPECT_EQ(st.compilations, 1u);
  EXPECT_EQ(st.hits + st.misses, static_cast<size_t>(kThreads * kCalls));
}

TEST(ConcurrencyAotFunction, ForwardBackwardFromFourThreadsMatchesOneThread) {
  constexpr int kCalls = 40;
  Weights w;
  auto reference = ag::aot_function(mlp);
  std::map<std::pair<int, int>, std::string> want;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) want[{t, i}] = train_step(reference, input_for(t, i), w);
  auto f = ag::aot_function(mlp);
  std::vector<std::vector<std::string>> got(kThreads, std::vector<std::string>(kCalls));
  run_together([&](int t) {
    for (int i = 0; i < kCalls; ++i) got[t][i] = train_step(f, input_for(t, i), w);
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) EXPECT_EQ(got[t][i], (want[std::pair{t, i}])) << t << "," << i;
  EXPECT_EQ(f.num_compilations(), 1u);
}

// The CompiledBackward node of a call made on one thread runs on another.
TEST(ConcurrencyAotFunction, BackwardOnAnotherThreadThanForward) {
  Weights w;
  auto f = ag::aot_function(mlp), reference = ag::aot_function(mlp);
  for (int round = 0; round < 10; ++round) {
    std::vector<Tensor> xs(kThreads), w1s(kThreads), losses(kThreads);
    run_together([&](int t) {
      xs[t] = input_for(t, round).requires_grad_();
      w1s[t] = w.w1.detach().clone().requires_grad_();
      losses[t] = std::get<1>(f(xs[t], w1s[t], w.w2));
    });
    run_together([&](int t) { losses[(t + 1) % kThreads].backward(); });
    for (int t = 0; t < kThreads; ++t) {
      Tensor x = input_for(t, round).requires_grad_(), w1 = w.w1.detach().clone().requires_grad_();
      std::get<1>(reference(x, w1, w.w2)).backward();
      EXPECT_EQ(bytes_of({xs[t].grad(), w1s[t].grad()}), bytes_of({x.grad(), w1.grad()})) << t;
    }
  }
}

// Weights shared by every thread and trained from all of them: each backward adds into the same
// .grad() (under the leaf's lock). Integer-valued data keeps every sum exact in any order.
TEST(ConcurrencyAutograd, SharedLeavesAccumulateEveryGradient) {
  constexpr int kCalls = 40;
  auto f = ag::aot_function([](const Tensor& x, const Tensor& w) { return (ag::mm(x, w)).sum(); });
  auto x_for = [](int t, int i) {
    return ag::from_vector(std::vector<double>(12, static_cast<double>(t + 3 * i)), {3, 4});
  };
  Tensor w = ag::zeros({4, 2}, ag::DType::f64).requires_grad_();
  run_together([&](int t) {
    for (int i = 0; i < kCalls; ++i) f(x_for(t, i), w).backward();
  });
  // d/dw sum(x @ w) = x^T @ ones: every row of w gets the column sums of x.
  double total = 0;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) total += 3.0 * (t + 3 * i);
  EXPECT_EQ(bytes_of(w.grad()), bytes_of(ag::full({4, 2}, total, ag::DType::f64)));
}

// Views made before their base had a history get it lazily, from the first reader (PyTorch's
// grad_fn getter): four threads reading and differentiating through the same views at once each
// see one history and the same gradient (the writes are under the view's lock; TSan checks).
TEST(ConcurrencyAutograd, ViewsAdoptTheirBaseHistoryOnceFromManyReaders) {
  for (int round = 0; round < 20; ++round) {
    Tensor b = ag::zeros({4, 3}, ag::DType::f64);
    std::vector<Tensor> views;
    for (int t = 0; t < kThreads; ++t) views.push_back(b.select(0, t % 2));
    Tensor w = ag::full({4, 3}, 2.0, ag::DType::f64).requires_grad_();
    b.add_(w);  // b gains a history; the views were made before it
    std::vector<std::string> grads(kThreads);
    std::vector<const void*> fns(kThreads);
    run_together([&](int t) {
      fns[t] = views[t].grad_fn().get();
      grads[t] = bytes_of(ag::autograd::grad({views[t].sum()}, {w}, {}, true)[0]);
    });
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_NE(fns[t], nullptr) << t;
      Tensor want = ag::zeros({4, 3}, ag::DType::f64);
      want.select(0, t % 2).fill_(1.0);
      EXPECT_EQ(grads[t], bytes_of(want)) << t;
    }
  }
}

// All threads call a cold function at once: one trace, one compile; the others wait for it.
TEST(ConcurrencyAotFunction, FirstCallsCompileOnce) {
  Weights w;
  std::atomic<int> traces{0};
  const ag::CompiledFunction* engine = nullptr;
  auto f = ag::aot_function([&](const Tensor& x, const Tensor& w1, const Tensor& w2) {
    ++traces;  // the body runs only while tracing
    // Hold the trace until every thread has missed, so they all overlap with this compile.
    for (int spin = 0; spin < 10000 && engine->stats().misses < kThreads; ++spin)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return mlp(x, w1, w2);
  });
  engine = &f.engine();
  std::vector<std::string> got(kThreads);
  run_together([&](int t) { got[t] = train_step(f, input_for(t, 0), w); });
  EXPECT_EQ(traces.load(), 1);
  ag::CacheStats st = f.stats();
  EXPECT_EQ(st.compilations, 1u);
  EXPECT_EQ(st.entries, 1u);
  EXPECT_EQ(st.misses, static_cast<size_t>(kThreads));
  EXPECT_EQ(st.hits, 0u);
  auto reference = ag::aot_function(mlp);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(got[t], train_step(reference, input_for(t, 0), w));
}

// A compile that fails is not cached: the threads that waited for it try again, each getting the
// error itself, and a later call compiles again.
TEST(ConcurrencyAotFunction, FailedCompileIsRetriedByEveryWaiter) {
  std::atomic<int> traces{0};
  const ag::CompiledFunction* engine = nullptr;
  auto f = ag::aot_function([&](const Tensor& x) -> Tensor {
    ++traces;
    for (int spin = 0; spin < 10000 && engine->stats().misses < kThreads; ++spin)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    throw std::runtime_error("refused while tracing");
    return x;
  });
  engine = &f.engine();
  std::vector<std::string> errors(kThreads);
  run_together([&](int t) {
    errors[t] = ag::testing::error_of<std::runtime_error>([&] { f(input_for(t, 0)); });
  });
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "refused while tracing") << t;
  EXPECT_EQ(traces.load(), kThreads);
  ag::CacheStats st = f.stats();
  EXPECT_EQ(st.compilations, static_cast<size_t>(kThreads));
  EXPECT_EQ(st.misses, static_cast<size_t>(kThreads));
  EXPECT_EQ(st.entries, 0u);
  EXPECT_THROW(f(input_for(0, 0)), std::runtime_error);
  EXPECT_EQ(traces.load(), kThreads + 1);
}

// Two threads cycle through many shapes (in opposite orders, so they ask for the same new keys
// at the same time) while two others call one hot shape and read graphs() and stats(): every
// key compiles once and every result matches a one-thread run.
TEST(ConcurrencyAotFunction, RecompileStormBesideHotCalls) {
  constexpr int kShapes = 10, kHotCalls = 30, kHotRows = 16;
  Weights w;
  ag::AotConfig config;
  config.cache_size_limit = 64;
  auto reference = ag::aot_function(mlp, config);
  auto f = ag::aot_function(mlp, config);
  auto rows_at = [](int t, int k) { return t == 0 ? 1 + k : kShapes - k; };
  std::vector<std::vector<std::string>> got(kThreads);
  std::atomic<bool> graphs_ok{true};
  run_together([&](int t) {
    for (int k = 0; k < (t < 2 ? 2 * kShapes : kHotCalls); ++k) {
      int rows = t < 2 ? rows_at(t, k % kShapes) : kHotRows;
      got[t].push_back(train_step(f, input_for(t, k, rows), w));
      if (t >= 2) {
        ag::CompiledGraphs g = f.graphs();  // some specialization, whole and readable
        graphs_ok = graphs_ok && g.forward.find("aten.mm.default") != std::string::npos;
        ag::CacheStats st = f.stats();
        graphs_ok = graphs_ok && st.entries <= kShapes + 1 && f.num_compilations() <= kShapes + 1;
      }
    }
  });
  EXPECT_TRUE(graphs_ok);
  for (int t = 0; t < kThreads; ++t)
    for (int k = 0; k < static_cast<int>(got[t].size()); ++k) {
      int rows = t < 2 ? rows_at(t, k % kShapes) : kHotRows;
      EXPECT_EQ(got[t][k], train_step(reference, input_for(t, k, rows), w)) << t << "," << k;
    }
  ag::CacheStats st = f.stats();
  EXPECT_EQ(st.compilations, static_cast<size_t>(kShapes + 1));
  EXPECT_EQ(st.entries, static_cast<size_t>(kShapes + 1));
  EXPECT_EQ(st.eager_fallbacks, 0u);
  EXPECT_EQ(st.hits + st.misses, static_cast<size_t>(4 * kShapes + 2 * kHotCalls));
}

// The storm again with a small cache: exactly cache_size_limit keys compile, the rest run
// eagerly, and every result still matches eager.
TEST(ConcurrencyAotFunction, CacheLimitReachedDuringStorm) {
  constexpr int kShapes = 6;
  Weights w;
  ag::AotConfig config;
  config.cache_size_limit = 3;
  auto f = ag::aot_function(mlp, config);
  std::vector<std::vector<std::vector<Tensor>>> got(kThreads);
  ::testing::internal::CaptureStderr();
  run_together([&](int t) {
    ag::NoGradGuard no_grad;
    for (int k = 0; k < kShapes; ++k) {
      auto [y, s] = f(input_for(t, k, 1 + (k + t) % kShapes), w.w1, w.w2);
      got[t].push_back({y, s});
    }
  });
  std::string log = ::testing::internal::GetCapturedStderr();
  for (int t = 0; t < kThreads; ++t)
    for (int k = 0; k < kShapes; ++k) {
      auto [y, s] = mlp(input_for(t, k, 1 + (k + t) % kShapes), w.w1, w.w2);
      EXPECT_TRUE(ag::testing::allclose(got[t][k][0], y, 1e-14, 1e-14)) << t << "," << k;
      EXPECT_TRUE(ag::testing::allclose(got[t][k][1], s, 1e-14, 1e-14)) << t << "," << k;
    }
  ag::CacheStats st = f.stats();
  EXPECT_EQ(st.compilations, 3u);
  EXPECT_EQ(st.entries, 3u);
  EXPECT_EQ(st.hits + st.misses, static_cast<size_t>(kThreads * kShapes));
  EXPECT_EQ(st.eager_fallbacks, static_cast<size_t>(kThreads * (kShapes - 3)));
  size_t first = log.find("reached cache_size_limit");
  EXPECT_NE(first, std::string::npos) << log;
  EXPECT_EQ(log.find("reached cache_size_limit", first + 1), std::string::npos) << log;
}

TEST(ConcurrencyInterpreter, OneCallableFromFourThreads) {
  ag::graph::Graph g = ag::graph::parse_graph(R"(graph f(%x: f64[4,8], %w: f64[8,3]) {
  %mm: f64[4,3] = aten.mm.default(%x, %w)
  %t: f64[4,3] = aten.tanh.default(%mm)
  %s: f64[] = aten.sum.dim_IntList(%t, dim=[1], keepdim=false)
  return (%s, %t)
})");
  ag::backends::CompiledGraph run = ag::backends::compile_interpreter(g);
  Tensor w = pattern({8, 3}, 11, 79);
  std::vector<std::vector<std::string>> got(kThreads);
  run_together([&](int t) {
    for (int i = 0; i < 100; ++i) got[t].push_back(bytes_of(run({input_for(t, i, 4), w})));
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 100; ++i) EXPECT_EQ(got[t][i], bytes_of(run({input_for(t, i, 4), w}))) << t;
}

TEST(ConcurrencyGraphProgram, RunFromFourThreadsMatchesOneThread) {
  ag::GraphProgram program = ag::GraphProgram::parse(R"(graph forward(%x: f64[4,8], %w: f64[8,3]) {
  %mm: f64[4,3] = aten.mm.default(%x, %w)
  %t: f64[4,3] = aten.tanh.default(%mm)
  %s: f64[] = aten.sum.default(%t)
  return (%s, %t)
})");
  Tensor w = pattern({8, 3}, 11, 79);
  auto run = [&](int t, int i) {
    ag::GraphRunResult r = program.run({input_for(t, i, 4), w}, {.backward = (i % 2) == 1});
    return bytes_of(r.outputs) + bytes_of(r.grads);
  };
  std::vector<std::vector<std::string>> got(kThreads);
  run_together([&](int t) {
    for (int i = 0; i < 6; ++i) got[t].push_back(run(t, i));
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 6; ++i) EXPECT_EQ(got[t][i], run(t, i)) << t << "," << i;
}

// Threads start together on a cold module with different batch sizes: traces swap stand-ins
// into the module's slots while other threads lift them. Gradients through autograd::grad, so
// the shared parameters' .grad() stays untouched.
TEST(ConcurrencyAotModule, CallsFromFourThreadsMatchOneThread) {
  auto make = [] {
    ag::manual_seed(7);
    return std::make_shared<nn::MLP>(8, 16);
  };
  auto model = make(), reference_model = make();
  auto compiled = ag::aot_module(model);
  auto reference = ag::aot_module(reference_model);
  // Read before the threads start: a module's slots hold stand-ins while it traces.
  std::vector<Tensor> params = {model->fc1->weight, model->fc2->bias},
                      reference_params = {reference_model->fc1->weight, reference_model->fc2->bias};
  auto step = [](auto& m, const std::vector<Tensor>& wrt_params, int t, int i) {
    Tensor x = input_for(t, i, 1 + t % 2).to(ag::DType::f32).requires_grad_();
    Tensor y = m(x);
    std::vector<Tensor> wrt = wrt_params;
    wrt.push_back(x);
    return bytes_of(y) + bytes_of(ag::autograd::grad({y.sum()}, wrt));
  };
  std::vector<std::vector<std::string>> got(kThreads);
  run_together([&](int t) {
    for (int i = 0; i < 5; ++i) got[t].push_back(step(compiled, params, t, i));
  });
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < 5; ++i)
      EXPECT_EQ(got[t][i], step(reference, reference_params, t, i)) << t << "," << i;
  EXPECT_EQ(compiled.stats().compilations, 2u);
  for (const Tensor& p : model->parameters()) {
    EXPECT_FALSE(p.is_fake());
    EXPECT_FALSE(p.grad().defined());
  }
}

// Threads writing disjoint rows of one tensor bump one version counter: no update is lost.
TEST(ConcurrencyTensor, DisjointViewWritesCountEveryVersionBump) {
  Tensor buffer = ag::zeros({kThreads, 8});
  uint64_t before = buffer.version();
  run_together([&](int t) {
    Tensor row = buffer.select(0, t);
    for (int i = 0; i < 500; ++i) row.fill_(static_cast<double>(i));
  });
  EXPECT_EQ(buffer.version() - before, static_cast<uint64_t>(kThreads * 500));
  EXPECT_EQ(bytes_of(buffer), bytes_of(ag::full({kThreads, 8}, 499.0)));
}
