// DiskCache (src/cache/disk_cache.h): entries round trip; damaged, truncated and foreign entries
// are removed and never returned; least recently used entries go first; an unwritable directory
// degrades with one warning; threads and processes share one directory.
#include "cache/disk_cache.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "cache/hash.h"
#include "cache_testing.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;
using ag::cache::DiskCache;
using ag::cache::LookupStatus;

namespace {

class DiskCacheTest : public ag::testing::CacheTest {
 protected:
  DiskCache disk() const { return DiskCache::from_environment(); }
};

std::string blob(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + 7 * i);
  return s;
}

}  // namespace

TEST_F(DiskCacheTest, RoundTripsBytesAndCountsThem) {
  std::string payload = blob(1000, 0);  // holds NULs
  std::optional<fs::path> p = disk().put("artifacts", "key-1", payload);
  ASSERT_TRUE(p);
  EXPECT_EQ(*p, dir_ / "artifacts" / ag::cache::hash128_hex("key-1"));
  ag::cache::Lookup l = disk().get("artifacts", "key-1");
  EXPECT_EQ(l.status, LookupStatus::hit);
  EXPECT_EQ(l.bytes, payload);
  EXPECT_EQ(disk().get("artifacts", "key-2").status, LookupStatus::miss);
  EXPECT_EQ(disk().get("cpp", "key-1").status, LookupStatus::miss);
  // The payload comes first, then the trailer: a stored shared object is still an ELF file.
  std::string file = read_file(*p);
  EXPECT_EQ(file, payload + ag::cache::entry_trailer("key-1", payload));
  ag::cache::DiskStats s = disk().stats();
  ASSERT_EQ(s.namespaces.size(), 1u);
  EXPECT_EQ(s.namespaces[0].name, "artifacts");
  EXPECT_EQ(s.namespaces[0].entries, 1u);
  EXPECT_EQ(s.namespaces[0].bytes, file.size());
  EXPECT_EQ(disk().clear(), 1u);
  EXPECT_EQ(disk().get("artifacts", "key-1").status, LookupStatus::miss);
}

TEST_F(DiskCacheTest, FilesThatAreNotEntriesAreNeverCountedEvictedOrCleared) {
  // AOTGRAD_CACHE_DIR set to ~/.cache or a project directory by mistake: clear and eviction
  // remove the cache's own entries only (review of 2026-11-28: they removed every regular file
  // of every lowercase subdirectory, and followed a linked one).
  fs::create_directories(dir_ / "notes");
  write_file(dir_ / "notes" / "todo.txt", "mine");
  fs::create_directories(dir_ / "cpp");
  write_file(dir_ / "cpp" / "README", "mine too");
  write_file(dir_ / "cpp" / "k0123abcd.so", "an object of an older build");
  fs::path outside = dir_.parent_path() / (dir_.filename().string() + "-outside");
  fs::create_directories(outside);
  write_file(outside / "0123456789abcdef0123456789abcdef", "not under the cache directory");
  fs::create_directory_symlink(outside, dir_ / "linked");
  ASSERT_TRUE(disk().put("artifacts", "k", "x"));
  EXPECT_EQ(disk().clear(), 2u);  // the entry and the old object
  EXPECT_TRUE(fs::exists(dir_ / "notes" / "todo.txt"));
  EXPECT_TRUE(fs::exists(dir_ / "cpp" / "README"));
  EXPECT_FALSE(fs::exists(dir_ / "cpp" / "k0123abcd.so"));
  EXPECT_TRUE(fs::exists(outside / "0123456789abcdef0123456789abcdef"));
  fs::remove_all(outside);
}

TEST_F(DiskCacheTest, OpenFileKeepsTheCheckedBytesWhenTheEntryIsReplaced) {
  disk().put("cpp", "k", "first payload");
  std::optional<ag::cache::CachedFile> f = disk().open_file("cpp", "k");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->payload_size(), 13u);
  disk().put("cpp", "k", "second, longer payload");
  EXPECT_EQ(read_file(f->path()).substr(0, 13), "first payload");
  EXPECT_EQ(disk().get("cpp", "k").bytes, "second, longer payload");
}

TEST_F(DiskCacheTest, DamagedTruncatedAndForeignEntriesAreRemovedAndNeverReturned) {
  std::string payload = blob(256, 3);
  fs::path p = disk().entry_path("artifacts", "k");
  std::string good = payload + ag::cache::entry_trailer("k", payload);
  struct Case {
    const char* what;
    std::string bytes;
  };
  std::string flipped = good;
  flipped[100] ^= 0x10;
  std::vector<Case> cases = {
      {"bit flip in the payload", flipped},
      {"truncated", good.substr(0, good.size() - 1)},
      {"truncated below the trailer", good.substr(0, 20)},
      {"empty", ""},
      {"foreign file", "#!/bin/sh\necho not a cache entry\n"},
      {"another format version", payload + ag::cache::entry_trailer("k", payload, 2)},
      {"stored under another key", payload + ag::cache::entry_trailer("other", payload)},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    fs::create_directories(p.parent_path());
    write_file(p, c.bytes);
    ag::cache::Lookup l = disk().get("artifacts", "k");
    EXPECT_EQ(l.status, LookupStatus::corrupt);
    EXPECT_TRUE(l.bytes.empty());
    EXPECT_FALSE(l.problem.empty());
    EXPECT_FALSE(fs::exists(p)) << "a bad entry must be removed";
    EXPECT_EQ(disk().get("artifacts", "k").status, LookupStatus::miss);
  }
  // Rebuilt: a put after the removal is read back.
  disk().put("artifacts", "k", payload);
  EXPECT_EQ(disk().get("artifacts", "k").bytes, payload);
}

TEST_F(DiskCacheTest, EvictsTheLeastRecentlyUsedFirst) {
  std::string payload = blob(1000, 1);
  uint64_t entry = payload.size() + ag::cache::entry_trailer("a", payload).size();
  ::setenv("AOTGRAD_CACHE_SIZE_LIMIT", std::to_string(3 * entry).c_str(), 1);
  ASSERT_EQ(disk().settings().size_limit, 3 * entry);
  disk().put("artifacts", "a", payload);
  disk().put("cpp", "b", payload);
  disk().put("artifacts", "c", payload);
  EXPECT_EQ(disk().get("artifacts", "a").status, LookupStatus::hit);  // a is now the newest
  disk().put("artifacts", "d", payload);  // over the limit: b, the least recently used, goes
  EXPECT_EQ(disk().get("cpp", "b").status, LookupStatus::miss);
  EXPECT_EQ(disk().get("artifacts", "a").status, LookupStatus::hit);
  disk().put("cpp", "e", payload);  // then c
  EXPECT_EQ(disk().get("artifacts", "c").status, LookupStatus::miss);
  for (const char* k : {"a", "d"}) EXPECT_EQ(disk().get("artifacts", k).status, LookupStatus::hit);
  EXPECT_EQ(disk().get("cpp", "e").status, LookupStatus::hit);
  // A payload larger than the whole limit is not stored (and evicts nothing).
  EXPECT_FALSE(disk().put("artifacts", "huge", blob(4 * entry, 2)));
  EXPECT_EQ(disk().get("artifacts", "a").status, LookupStatus::hit);
}

TEST_F(DiskCacheTest, ReadsItsSettingsFromTheEnvironment) {
  EXPECT_TRUE(disk().enabled());
  EXPECT_EQ(disk().settings().dir, dir_);
  EXPECT_EQ(disk().settings().size_limit, ag::cache::kDefaultSizeLimit);
  ::setenv("AOTGRAD_CACHE_SIZE_LIMIT", "512K", 1);
  EXPECT_EQ(disk().settings().size_limit, 512u * 1024);
  ::setenv("AOTGRAD_CACHE_SIZE_LIMIT", "2g", 1);
  EXPECT_EQ(disk().settings().size_limit, uint64_t{2} << 30);
  ::unsetenv("AOTGRAD_CACHE_DIR");
  std::optional<std::string> xdg, home;
  if (const char* v = std::getenv("XDG_CACHE_HOME")) xdg = v;
  ::setenv("XDG_CACHE_HOME", "/somewhere/xdg", 1);
  EXPECT_EQ(disk().settings().dir, fs::path("/somewhere/xdg/aotgrad"));
  ::unsetenv("XDG_CACHE_HOME");
  if (const char* v = std::getenv("HOME")) {
    EXPECT_EQ(disk().settings().dir, fs::path(v) / ".cache" / "aotgrad");
  }
  if (xdg) ::setenv("XDG_CACHE_HOME", xdg->c_str(), 1);
  ::setenv("AOTGRAD_CACHE_DIR", dir_.c_str(), 1);
  ::setenv("AOTGRAD_CACHE", "0", 1);
  DiskCache off = disk();
  EXPECT_FALSE(off.enabled());
  EXPECT_EQ(off.settings().disabled_reason, "AOTGRAD_CACHE=0");
  EXPECT_FALSE(off.put("artifacts", "k", "x"));
  EXPECT_EQ(off.get("artifacts", "k").status, LookupStatus::disabled);
  EXPECT_FALSE(fs::exists(dir_ / "artifacts"));
  EXPECT_THROW(off.entry_path("../escape", "k"), std::invalid_argument);
}

TEST_F(DiskCacheTest, AnUnwritableDirectoryMeansNoCacheAndOneWarning) {
  fs::create_directories(dir_);
  write_file(dir_ / "file", "a regular file where a directory should be");
  ::setenv("AOTGRAD_CACHE_DIR", (dir_ / "file" / "cache").c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(disk().put("artifacts", "k", "payload"));
  EXPECT_FALSE(disk().put("artifacts", "k2", "payload"));
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(disk().get("artifacts", "k").status, LookupStatus::miss);
  // Once per process: another test of this process may have printed it already.
  EXPECT_LE(std::count(err.begin(), err.end(), '\n'), 1);
  if (!err.empty()) {
    EXPECT_NE(err.find("[aotgrad] warning: cache directory "), std::string::npos) << err;
    EXPECT_NE(err.find("running without the on-disk cache"), std::string::npos) << err;
  }
}

TEST_F(DiskCacheTest, ThreadsReadAndWriteOneKeyAtOnce) {
  const std::string a = blob(5000, 1), b = blob(7000, 2);
  std::atomic<int> bad{0}, hits{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      DiskCache d = DiskCache::from_environment();
      for (int i = 0; i < 50; ++i) {
        d.put("cpp", "shared", (i + t) % 2 ? a : b);
        ag::cache::Lookup l = d.get("cpp", "shared");
        if (l.status == LookupStatus::hit) ++hits;
        if (l.status == LookupStatus::corrupt ||
            (l.status == LookupStatus::hit && l.bytes != a && l.bytes != b))
          ++bad;
      }
    });
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(entries("cpp").size(), 1u);
}

// Two processes store the same keys while this one reads them: every read is a whole entry, and
// no temporary file is left behind.
TEST_F(DiskCacheTest, TwoProcessesStoreTheSameKeys) {
  const std::string payload = blob(20000, 5);
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child touches the cache only, and leaves with _exit
      DiskCache d = DiskCache::from_environment();
      bool ok = true;
      for (int i = 0; i < 100; ++i)
        ok = d.put("artifacts", "k" + std::to_string(i % 5), payload) && ok;
      ::_exit(ok ? 0 : 1);
    }
    children.push_back(pid);
  }
  int bad = 0;
  for (int i = 0; i < 200; ++i) {
    ag::cache::Lookup l = disk().get("artifacts", "k" + std::to_string(i % 5));
    if (l.status == LookupStatus::corrupt || (l.status == LookupStatus::hit && l.bytes != payload))
      ++bad;
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(entries("artifacts").size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(disk().get("artifacts", "k" + std::to_string(i)).bytes, payload);
  for (const auto& e : fs::directory_iterator(dir_ / "artifacts"))
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
}
