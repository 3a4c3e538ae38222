// The AOTAutogradCache (src/cache/artifact_cache.h): a compile in a fresh compiled function (as in
// a new process) finds the artifact an earlier one stored, skips the joint and the partitioner,
// and gives bit-identical results; anything the artifact depends on changes the key; a damaged or
// mismatched entry is rebuilt, never run.
#include "cache/artifact_cache.h"

#include "aot/log.h"
#include "aotgrad/graph_program.h"
#include "cache/hash.h"
#include "cache_testing.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;
using ag::Tensor;
using ag::testing::bits;

namespace {

class ArtifactCacheTest : public ag::testing::CacheTest {};

Tensor leaf(const ag::IntList& sizes, uint64_t seed) {
  ag::manual_seed(seed);
  return ag::randn(sizes).detach().requires_grad_();
}

Tensor mlp(const Tensor& x, const Tensor& w, const Tensor& b) {
  return ag::tanh(ag::add(ag::mm(x, w), b)).sum();
}

struct Outcome {
  std::vector<uint32_t> loss, gx, gw;
  ag::CacheStats stats;
};

// One call and its backward in a new compiled function: what a new process does.
Outcome run_fresh(ag::AotConfig config = {}, ag::IntList x_sizes = {4, 3}) {
  auto fn = ag::aot_function(
      [](const Tensor& x, const Tensor& w, const Tensor& b) { return mlp(x, w, b); }, config);
  Tensor x = leaf(x_sizes, 1), w = leaf({x_sizes[1], 2}, 2), b = leaf({2}, 3);
  Tensor loss = fn(x, w, b);
  loss.backward();
  return {bits(loss), bits(x.grad()), bits(w.grad()), fn.stats()};
}

}  // namespace

TEST_F(ArtifactCacheTest, ANewFunctionHitsGivesIdenticalBitsAndSkipsLowering) {
  Outcome first = run_fresh();
  EXPECT_EQ(first.stats.disk_misses, 1u);
  EXPECT_EQ(first.stats.disk_hits, 0u);
  ASSERT_EQ(entries("artifacts").size(), 1u);
  Outcome second = run_fresh();
  EXPECT_EQ(second.stats.disk_hits, 1u);
  EXPECT_EQ(second.stats.disk_misses, 0u);
  EXPECT_EQ(second.stats.compilations, 1u);
  EXPECT_EQ(second.loss, first.loss);
  EXPECT_EQ(second.gx, first.gx);
  EXPECT_EQ(second.gw, first.gw);
  EXPECT_EQ(entries("artifacts").size(), 1u);
}

TEST_F(ArtifactCacheTest, LogsMissStoreThenHit) {
  ::setenv("AOTGRAD_LOG", "cache", 1);
  ::testing::internal::CaptureStderr();
  run_fresh();
  run_fresh();
  std::string err = ::testing::internal::GetCapturedStderr();
  std::string entry = entries("artifacts").at(0).filename().string();
  size_t miss = err.find("cache fn=fn event=disk_miss entry=" + entry);
  size_t store = err.find("cache fn=fn event=disk_store entry=" + entry);
  size_t hit = err.find("cache fn=fn event=disk_hit entry=" + entry);
  EXPECT_NE(miss, std::string::npos) << err;
  EXPECT_NE(store, std::string::npos) << err;
  EXPECT_NE(hit, std::string::npos) << err;
  EXPECT_TRUE(miss < store && store < hit) << err;
}

TEST_F(ArtifactCacheTest, AChangedConfigMisses) {
  run_fresh();
  std::vector<ag::AotConfig> changed(6);
  changed[0].partitioner = "min_cut";
  changed[1].partitioner = "min_cut";
  changed[1].activation_memory_budget = 0.5;
  changed[2].name = "other";
  changed[3].bw_compiler = "interpreter";  // a compiler name the artifact records
  changed[4].keep_inference_input_mutations = true;
  // Changes the graphs only where attention is; unset, it follows the compiler.
  changed[5].fuse_attention = ag::AotConfig{}.fw_compiler != "cpp";
  for (size_t i = 0; i < changed.size(); ++i) {
    SCOPED_TRACE(i);
    Outcome r = run_fresh(changed[i]);
    EXPECT_EQ(r.stats.disk_hits, 0u);
    EXPECT_EQ(r.stats.disk_misses, 1u);
  }
  EXPECT_EQ(entries("artifacts").size(), 1u + changed.size());
  EXPECT_EQ(run_fresh(changed[1]).stats.disk_hits, 1u);
}

TEST_F(ArtifactCacheTest, AChangedInputPropertyMisses) {
  run_fresh();
  EXPECT_EQ(run_fresh({}, {5, 3}).stats.disk_misses, 1u);  // a shape
  auto fn = ag::aot_function(
      [](const Tensor& x, const Tensor& w, const Tensor& b) { return mlp(x, w, b); });
  Tensor x = leaf({4, 3}, 1).detach(), w = leaf({3, 2}, 2), b = leaf({2}, 3);
  fn(x, w, b);  // x no longer requires grad
  EXPECT_EQ(fn.stats().disk_misses, 1u);
  {
    ag::NoGradGuard no_grad;  // grad mode
    fn(x, w, b);
  }
  EXPECT_EQ(fn.stats().disk_misses, 2u);
  fn(x.to(ag::DType::f64), w.detach().to(ag::DType::f64), b.detach().to(ag::DType::f64));
  EXPECT_EQ(fn.stats().disk_misses, 3u);  // a dtype
  EXPECT_EQ(fn.stats().disk_hits, 0u);
}

// Why the key is the traced graph, not the function's code: one lambda type, two captured
// numbers, two graphs.
TEST_F(ArtifactCacheTest, ACapturedNumberThatChangesTheGraphMisses) {
  auto make = [](double scale) {
    return ag::aot_function([scale](const Tensor& x) { return (x * scale).sum(); });
  };
  Tensor x = leaf({3}, 4);
  auto twice = make(2.0), thrice = make(3.0);
  Tensor a = twice(x), b = thrice(x);
  EXPECT_EQ(thrice.stats().disk_hits, 0u);
  EXPECT_NE(bits(a), bits(b));
  EXPECT_EQ(bits(b), bits((x * 3.0).sum()));
  auto thrice_again = make(3.0);
  EXPECT_EQ(bits(thrice_again(x)), bits(b));
  EXPECT_EQ(thrice_again.stats().disk_hits, 1u);
}

TEST_F(ArtifactCacheTest, AnInnerGradsRetainGraphChangesTheKey) {
  // The two functions trace the same graph; only the tracer knows that the second one's inner
  // grad frees what the outer backward reads. Sharing one entry, the second would not raise
  // where eager does (or, stored first, the first would raise on valid code).
  auto make = [](bool retain) {
    return ag::aot_function([retain](const Tensor& x) {
      Tensor y = x.sin();
      Tensor g = ag::autograd::grad({y.sum()}, {x}, {}, retain)[0];
      return y.sum() + g.sum();
    });
  };
  for (bool retain_first : {true, false}) {
    SCOPED_TRACE(retain_first ? "retain_graph stored first" : "retain_graph stored second");
    ag::cache::DiskCache::from_environment().clear();
    auto first = make(retain_first), second = make(!retain_first);
    Tensor a = leaf({4}, 9), b = leaf({4}, 9);
    Tensor la = first(a), lb = second(b);
    EXPECT_EQ(second.stats().disk_hits, 0u);
    Tensor& kept = retain_first ? la : lb;
    Tensor& freed = retain_first ? lb : la;
    EXPECT_NO_THROW(kept.backward());
    EXPECT_THROW(freed.backward(), std::runtime_error);
  }
}

namespace {

ag::aot::TracedFunction traced_mlp(std::vector<Tensor> inputs) {
  return {
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mlp(in[0], in[1], in[2])}; },
      std::move(inputs),
      "TTT",
      {}};
}

std::vector<Tensor> mlp_leaves() {
  return {leaf({4, 3}, 1), leaf({3, 2}, 2), leaf({2}, 3)};
}

}  // namespace

TEST_F(ArtifactCacheTest, AnotherVersionOrBuildMisses) {
  using ag::cache::ArtifactCache;
  using ag::cache::DiskEvent;
  ag::cache::KeyVersions now = ag::cache::KeyVersions::current();
  ASSERT_EQ(now.build_id.size(), 40u) << "this build has no GNU build-id";
  ag::AotConfig cfg;
  auto lower = [&](const ag::cache::KeyVersions& v) {
    return ArtifactCache(ag::cache::DiskCache::from_environment(), v)
        .lower(traced_mlp(mlp_leaves()), cfg)
        .event;
  };
  EXPECT_EQ(lower(now), DiskEvent::miss);
  EXPECT_EQ(lower(now), DiskEvent::hit);
  ag::cache::KeyVersions format = now, version = now, build = now, none = now;
  ++format.artifact_format;  // a bump of the artifact format (an op's serialized form changed)
  version.aotgrad_version += ".1";
  build.build_id[0] = build.build_id[0] == '0' ? '1' : '0';
  for (const auto& v : {format, version, build}) EXPECT_EQ(lower(v), DiskEvent::miss);
  none.build_id.clear();  // no build-id: never cached
  EXPECT_EQ(lower(none), DiskEvent::bypass);
  EXPECT_EQ(entries("artifacts").size(), 4u);
}

TEST_F(ArtifactCacheTest, ADamagedEntryIsRebuiltNeverRun) {
  Outcome good = run_fresh();
  fs::path entry = entries("artifacts").at(0);
  std::string bytes = read_file(entry);
  // 1. A flipped bit: the entry's checksum fails.
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x01;
  write_file(entry, flipped);
  Outcome r1 = run_fresh();
  EXPECT_EQ(r1.stats.disk_hits, 0u);
  EXPECT_EQ(r1.stats.disk_misses, 1u);
  EXPECT_EQ(r1.loss, good.loss);
  EXPECT_EQ(read_file(entry), bytes) << "rebuilt and stored again";
  // 2. A whole entry (its checksum right) whose payload is not an artifact of this build.
  std::string key_text;
  {
    ag::cache::ArtifactCache c = ag::cache::ArtifactCache::from_environment();
    ag::aot::TracedFunction t = traced_mlp(mlp_leaves());
    ag::AotConfig cfg;
    ag::aot::Captured captured = ag::aot::capture(t, cfg);
    key_text = c.key(captured);
    ASSERT_EQ(ag::cache::hash128_hex(key_text), entry.filename().string());
    c.disk().put("artifacts", key_text, "AOTGRADA garbage that is no artifact");
  }
  ::setenv("AOTGRAD_LOG", "cache", 1);
  ::testing::internal::CaptureStderr();
  Outcome r2 = run_fresh();
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("event=disk_corrupt"), std::string::npos) << err;
  EXPECT_EQ(r2.stats.disk_hits, 0u);
  EXPECT_EQ(r2.loss, good.loss);
  EXPECT_EQ(r2.gw, good.gw);
  // 3. A valid artifact of another function stored under this key: refused, not run.
  ::unsetenv("AOTGRAD_LOG");
  auto other = ag::aot_function([](const Tensor& x) { return x.exp().sum(); });
  other(leaf({3}, 5));
  ::setenv("AOTGRAD_LOG", "cache", 1);
  ag::cache::DiskCache::from_environment().put("artifacts", key_text,
                                               ag::serialize_artifact(other.artifact()));
  ::testing::internal::CaptureStderr();
  Outcome r3 = run_fresh();
  err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("event=disk_corrupt"), std::string::npos) << err;
  EXPECT_NE(err.find("differ from the call"), std::string::npos) << err;
  EXPECT_EQ(r3.stats.disk_hits, 0u);
  EXPECT_EQ(r3.loss, good.loss);
  EXPECT_EQ(run_fresh().stats.disk_hits, 1u);
}

TEST_F(ArtifactCacheTest, OffMeansNothingStored) {
  ::setenv("AOTGRAD_CACHE", "0", 1);
  Outcome a = run_fresh(), b = run_fresh();
  EXPECT_EQ(a.stats.disk_misses + a.stats.disk_hits + b.stats.disk_hits, 0u);
  EXPECT_FALSE(fs::exists(dir_ / "artifacts"));
}

TEST_F(ArtifactCacheTest, GraphProgramHitsOnTheSameGraphText) {
  const std::string text = R"(graph forward(%x: f32[2,3], %w: f32[3,2]) {
  %mm: f32[2,2] = aten.mm.default(%x, %w)
  %t: f32[2,2] = aten.tanh.default(%mm)
  %s: f32[] = aten.sum.default(%t)
  return (%s)
}
)";
  std::vector<Tensor> in = {leaf({2, 3}, 6).detach(), leaf({3, 2}, 7).detach()};
  ag::GraphRunOptions opts;
  opts.backward = true;
  ::setenv("AOTGRAD_LOG", "cache", 1);
  ::testing::internal::CaptureStderr();
  ag::GraphRunResult first = ag::GraphProgram::parse(text, "g.graph").run(in, opts);
  ag::GraphRunResult second = ag::GraphProgram::parse(text, "g.graph").run(in, opts);
  std::string changed_text = text;
  changed_text.replace(changed_text.find("tanh"), 4, "sigmoid");
  ag::GraphProgram::parse(changed_text, "g.graph").run(in, opts);
  std::string err = ::testing::internal::GetCapturedStderr();
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t p = err.find(what); p != std::string::npos; p = err.find(what, p + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("event=disk_hit"), 1u) << err;
  EXPECT_EQ(count("event=disk_miss"), 2u) << err;
  EXPECT_EQ(bits(second.outputs[0]), bits(first.outputs[0]));
  EXPECT_EQ(bits(second.grads[0]), bits(first.grads[0]));
  EXPECT_EQ(bits(second.grads[1]), bits(first.grads[1]));
}
