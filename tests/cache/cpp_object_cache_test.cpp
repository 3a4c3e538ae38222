// The cpp backend's shared objects live in the on-disk cache (namespace "cpp"): one entry per
// generated source, counted by `stats` and removed by `clear`, and a corrupt entry is rebuilt,
// never loaded.
#include <gtest/gtest.h>

#include "backends/cpp/cpp_test_util.h"
#include "cache/cache_testing.h"
#include "cache/disk_cache.h"

namespace ag = aotgrad;

namespace {

class CppObjectCacheTest : public ag::testing::CacheTest {};

// A graph no other test compiles, so no loaded object of this process serves it.
constexpr const char* kGraph = R"(graph cached_kernel(%x: f64[3,5]) {
  %a: f64[3,5] = aten.mul.Scalar(%x, 0.3125)
  %c: f64[3,5] = aten.cos.default(%a)
  return (%c)
})";

std::vector<double> run_once(const ag::graph::Graph& g) {
  return ag::backends::compile_cpp(g)(ag::testing::graph_inputs(g, 2))[0].to_vector<double>();
}

uint64_t cpp_entries() {
  for (const ag::cache::NamespaceStats& ns :
       ag::cache::DiskCache::from_environment().stats().namespaces)
    if (ns.name == "cpp") return ns.entries;
  return 0;
}

}  // namespace

TEST_F(CppObjectCacheTest, TheObjectIsAnEntryThatStatsCountAndClearRemoves) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  std::vector<double> first = run_once(g);
  EXPECT_EQ(cpp_entries(), 1u);
  EXPECT_EQ(entries("cpp").size(), 1u);
  EXPECT_EQ(run_once(g), first);  // the entry (or this process's loaded copy) again
  EXPECT_EQ(cpp_entries(), 1u);
  EXPECT_GE(ag::cache::DiskCache::from_environment().clear(), 1u);
  EXPECT_EQ(cpp_entries(), 0u);
  EXPECT_EQ(run_once(g), first);  // rebuilt
  EXPECT_EQ(cpp_entries(), 1u);
}

TEST_F(CppObjectCacheTest, ACorruptObjectIsRebuiltAndNeverLoaded) {
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  std::vector<double> want = run_once(g);
  std::vector<std::filesystem::path> e = entries("cpp");
  ASSERT_EQ(e.size(), 1u);
  std::string bytes = read_file(e[0]);
  bytes[bytes.size() / 2] ^= 0x5a;  // a flipped byte in the middle of the machine code
  write_file(e[0], bytes);
  EXPECT_EQ(run_once(g), want);
  EXPECT_NE(read_file(e[0]), bytes);       // replaced by a good build
  write_file(e[0], bytes.substr(0, 100));  // truncated
  EXPECT_EQ(run_once(g), want);
  EXPECT_EQ(cpp_entries(), 1u);
}

TEST_F(CppObjectCacheTest, CacheOffStillCompilesAndStoresNothing) {
  ::setenv("AOTGRAD_CACHE", "0", 1);
  ag::graph::Graph g = ag::graph::parse_graph(kGraph);
  std::vector<double> got = run_once(g);
  ::unsetenv("AOTGRAD_CACHE");
  EXPECT_EQ(got.size(), 15u);
  EXPECT_TRUE(entries("cpp").empty());
}

// dlopen hands back an already loaded library whose path equals the one asked for: loading two
// cached objects through one reused path (a descriptor's /proc/self/fd/N) ran the first one's
// kernels for the second graph.
TEST_F(CppObjectCacheTest, TwoCachedObjectsLoadedOneAfterTheOtherStayApart) {
  ag::graph::Graph a = ag::graph::parse_graph(kGraph);
  ag::graph::Graph b = ag::graph::parse_graph(R"(graph cached_other(%x: f64[3,5]) {
  %a: f64[3,5] = aten.mul.Scalar(%x, 0.3125)
  %c: f64[3,5] = aten.sin.default(%a)
  return (%c)
})");
  std::vector<double> want_a = run_once(a), want_b = run_once(b);  // both stored
  ASSERT_NE(want_a, want_b);
  ag::backends::CompiledGraph keep_a = ag::backends::compile_cpp(a);  // a cache hit, held
  EXPECT_EQ(keep_a(ag::testing::graph_inputs(a, 2))[0].to_vector<double>(), want_a);
  EXPECT_EQ(run_once(b), want_b);  // another hit, loaded while the first stays loaded
}
