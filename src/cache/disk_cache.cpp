// DiskCache (cache/disk_cache.h). Reading guide: the environment first (settings), then the
// entry format (trailer, check_entry), then the four operations: get/open_file (read, check,
// touch), put (temporary file, rename, evict), eviction (flock, scan, oldest first) and
// stats/clear. The only state is the per-directory size estimate (g_estimates, under a mutex).
// Everything is plain POSIX I/O on descriptors: errors are return codes, never exceptions, since a
// cache that fails must only make things slower.
#include "cache/disk_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

#include "cache/hash.h"

namespace aotgrad::cache {
namespace {

constexpr char kMagic[8] = {'A', 'O', 'T', 'G', 'C', 'A', 'C', 'H'};
constexpr size_t kTrailerSize = 8 + 4 + 4 + 8 + 8 + 8;
constexpr char kTempPrefix[] = ".tmp-";
constexpr time_t kStaleTempSeconds = 3600;  // a temporary file this old lost its writer

// ---- settings ----

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// "1073741824", "512M", "1G", "64KiB": bytes, with binary K/M/G suffixes.
std::optional<uint64_t> parse_size(std::string_view s) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (UINT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + uint64_t(s[i] - '0');
  }
  if (i == 0) return std::nullopt;
  std::string suffix(s.substr(i));
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (suffix == "" || suffix == "B")
    shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB")
    shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB")
    shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB")
    shift = 30;
  else
    return std::nullopt;
  if (shift && v > (UINT64_MAX >> shift)) return std::nullopt;
  return v << shift;
}

std::atomic<bool> g_warned_unwritable{false}, g_warned_limit{false};

void warn_once(std::atomic<bool>& flag, const std::string& line) {
  if (!flag.exchange(true)) std::cerr << "[aotgrad] warning: " + line + "\n";
}

// ---- the entry format ----

void put_le(std::string& s, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += static_cast<char>(v >> (8 * i));
}
uint64_t get_le(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Reads [offset, offset + n) of `fd`; false on a short read or an error.
bool read_at(int fd, char* out, size_t n, off_t offset) {
  while (n > 0) {
    ssize_t got = ::pread(fd, out, n, offset);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
    offset += got;
  }
  return true;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t put = ::write(fd, data.data(), data.size());
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    data.remove_prefix(static_cast<size_t>(put));
  }
  return true;
}

// Reads and checks the entry open on `fd` for `key`: "" and its payload in `payload`, or what is
// wrong with it.
std::string check_entry(int fd, std::string_view key, std::string& payload) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) return std::string("cannot stat: ") + std::strerror(errno);
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kTrailerSize)
    return "truncated: " + std::to_string(size) + " bytes, shorter than the trailer";
  char t[kTrailerSize];
  if (!read_at(fd, t, kTrailerSize, static_cast<off_t>(size - kTrailerSize)))
    return "cannot read the trailer";
  if (std::memcmp(t, kMagic, sizeof kMagic) != 0)
    return "not an aotgrad cache entry (truncated, or written by another program)";
  if (uint64_t v = get_le(t + 8, 4); v != kEntryFormatVersion)
    return "entry format version " + std::to_string(v) + ", this build reads " +
           std::to_string(kEntryFormatVersion);
  uint64_t length = get_le(t + 16, 8);
  if (length != size - kTrailerSize)
    return "the trailer says " + std::to_string(length) + " payload bytes, the file holds " +
           std::to_string(size - kTrailerSize);
  if (get_le(t + 24, 8) != hash64(key)) return "stored under another key";
  payload.resize(length);
  if (!read_at(fd, payload.data(), length, 0)) return "cannot read the payload";
  if (get_le(t + 32, 8) != hash64(payload)) return "checksum mismatch (damaged payload)";
  return "";
}

// Wall time with nanoseconds: file times set from it order entries written in quick succession,
// which the kernel's coarse file clock would not.
timespec precise_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_REALTIME, &ts);
  return ts;
}

void touch(int fd) {
  timespec times[2] = {precise_now(), precise_now()};
  (void)::futimens(fd, times);  // not our file (another user's cache): LRU order only suffers
}

// Unlinks `path` if it is still the file open on `fd` (a writer may have renamed a good entry
// over it since).
void remove_if_same(int fd, const std::string& path) {
  struct stat open_st {
  }, path_st{};
  if (::fstat(fd, &open_st) == 0 && ::stat(path.c_str(), &path_st) == 0 &&
      open_st.st_ino == path_st.st_ino && open_st.st_dev == path_st.st_dev)
    ::unlink(path.c_str());
}

void check_namespace(std::string_view ns) {
  bool ok = !ns.empty() && ns.size() <= 64;
  for (char c : ns)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-');
  if (!ok)
    throw std::invalid_argument("cache namespace \"" + std::string(ns.substr(0, 64)) +
                                "\": expected 1-64 characters of [a-z0-9_-]");
}

bool is_namespace_name(const char* name) {
  if (!*name) return false;
  for (const char* c = name; *c; ++c)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_' || *c == '-'))
      return false;
  return true;
}

// An entry's file name: the 32 hex digits of its key's hash (DiskCache::entry_path), or, in
// `cpp`, a `k*.so` / `k*.cpp` object of the builds before the checked store (docs/caching.md),
// left to age out. Anything else in the directory is not the cache's: never counted, evicted or
// cleared (a cache directory set to ~/.cache or a project directory by mistake).
bool is_entry_name(std::string_view ns, std::string_view name) {
  if (name.size() == 32 && std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
      }))
    return true;
  auto ends_with = [&](std::string_view tail) {
    return name.size() > tail.size() && name.substr(name.size() - tail.size()) == tail;
  };
  return ns == "cpp" && name.size() > 1 && name[0] == 'k' &&
         (ends_with(".so") || ends_with(".cpp"));
}

// ---- directory scans ----

struct EntryFile {
  std::string path;
  std::string ns;
  uint64_t bytes = 0;
  timespec mtime{};
};

// Every entry of every namespace; removes temporary files older than kStaleTempSeconds.
std::vector<EntryFile> scan(const std::filesystem::path& dir) {
  std::vector<EntryFile> out;
  DIR* top = ::opendir(dir.c_str());
  if (!top) return out;
  time_t now = std::time(nullptr);
  while (dirent* d = ::readdir(top)) {
    if (!is_namespace_name(d->d_name)) continue;
    std::string ns_dir = (dir / d->d_name).string();
    struct stat ns_st {};
    // A directory of its own, not a link to one elsewhere.
    if (::lstat(ns_dir.c_str(), &ns_st) != 0 || !S_ISDIR(ns_st.st_mode)) continue;
    DIR* sub = ::opendir(ns_dir.c_str());
    if (!sub) continue;
    while (dirent* e = ::readdir(sub)) {
      std::string path = ns_dir + "/" + e->d_name;
      struct stat st {};
      if (e->d_name[0] == '.') {
        if (std::strncmp(e->d_name, kTempPrefix, sizeof kTempPrefix - 1) == 0 &&
            ::lstat(path.c_str(), &st) == 0 && now - st.st_mtim.tv_sec > kStaleTempSeconds)
          ::unlink(path.c_str());
        continue;
      }
      if (!is_entry_name(d->d_name, e->d_name) || ::lstat(path.c_str(), &st) != 0 ||
          !S_ISREG(st.st_mode))
        continue;
      out.push_back({path, d->d_name, static_cast<uint64_t>(st.st_size), st.st_mtim});
    }
    ::closedir(sub);
  }
  ::closedir(top);
  return out;
}

// An exclusive flock on DIR/.lock for the life of the object (none if the file cannot be made:
// eviction then still works, processes may merely evict the same entries twice).
class DirLock {
 public:
  explicit DirLock(const std::filesystem::path& dir)
      : fd_(::open((dir / ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_ >= 0)
      while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
      }
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);  // closing releases the lock
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

// Owns a file descriptor; closes it unless released.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd_ >= 0) ::close(fd_);
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  explicit operator bool() const { return fd_ >= 0; }
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// What this process knows of each directory's total size: a scan sets it, each put adds its bytes.
// A put scans (and evicts) only at the first put into a directory, when the estimate passes the
// limit, or every kPutsPerScan puts (to see other processes' writes), so that most puts into a
// large cache do not stat every entry.
constexpr unsigned kPutsPerScan = 32;
struct SizeEstimate {
  uint64_t bytes = 0;
  unsigned puts_since_scan = 0;
};
std::mutex g_estimates_mutex;
std::map<std::string, SizeEstimate> g_estimates;  // by directory; guarded by g_estimates_mutex

bool needs_scan(const std::string& dir, uint64_t added, uint64_t limit) {
  std::lock_guard lock(g_estimates_mutex);
  auto [it, fresh] = g_estimates.try_emplace(dir);
  if (fresh) return true;
  it->second.bytes += added;
  return it->second.bytes > limit || ++it->second.puts_since_scan >= kPutsPerScan;
}

void record_scan(const std::string& dir, uint64_t total) {
  std::lock_guard lock(g_estimates_mutex);
  g_estimates[dir] = {total, 0};
}

bool older(const EntryFile& a, const EntryFile& b) {
  if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
  if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
  return a.path < b.path;
}

}  // namespace

// ---- settings ----

CacheSettings CacheSettings::from_environment() {
  CacheSettings s;
  if (const char* on = env("AOTGRAD_CACHE")) {
    std::string v = on;
    if (v == "0" || v == "false" || v == "off" || v == "no") {
      s.disabled_reason = "AOTGRAD_CACHE=" + v;
      return s;
    }
  }
  if (const char* dir = env("AOTGRAD_CACHE_DIR"))
    s.dir = dir;
  else if (const char* xdg = env("XDG_CACHE_HOME"))
    s.dir = std::filesystem::path(xdg) / "aotgrad";
  else if (const char* home = env("HOME"))
    s.dir = std::filesystem::path(home) / ".cache" / "aotgrad";
  else {
    s.disabled_reason = "none of AOTGRAD_CACHE_DIR, XDG_CACHE_HOME, HOME is set";
    return s;
  }
  if (const char* limit = env("AOTGRAD_CACHE_SIZE_LIMIT")) {
    if (std::optional<uint64_t> v = parse_size(limit))
      s.size_limit = *v;
    else
      warn_once(g_warned_limit, "AOTGRAD_CACHE_SIZE_LIMIT=\"" + std::string(limit).substr(0, 40) +
                                    "\" is not a size (expected bytes, or a number with K, M or "
                                    "G); using the default 1G");
  }
  s.enabled = true;
  return s;
}

std::string entry_trailer(std::string_view key, std::string_view payload, uint32_t version) {
  std::string t(kMagic, sizeof kMagic);
  put_le(t, version, 4);
  put_le(t, 0, 4);
  put_le(t, payload.size(), 8);
  put_le(t, hash64(key), 8);
  put_le(t, hash64(payload), 8);
  return t;
}

// ---- CachedFile ----

CachedFile::CachedFile(CachedFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), payload_size_(other.payload_size_) {}

CachedFile& CachedFile::operator=(CachedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    payload_size_ = other.payload_size_;
  }
  return *this;
}

CachedFile::~CachedFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string CachedFile::path() const {
  return "/proc/self/fd/" + std::to_string(fd_);
}

// ---- DiskCache ----

DiskCache::DiskCache(CacheSettings settings) : settings_(std::move(settings)) {}

std::filesystem::path DiskCache::entry_path(std::string_view ns, std::string_view key) const {
  check_namespace(ns);
  return settings_.dir / std::string(ns) / hash128_hex(key);
}

std::optional<CachedFile> DiskCache::open_file(std::string_view ns, std::string_view key,
                                               Lookup* outcome) const {
  Lookup local;
  Lookup& l = outcome ? *outcome : local;
  l = Lookup{};
  if (!enabled()) {
    l.status = LookupStatus::disabled;
    return std::nullopt;
  }
  std::string path = entry_path(ns, key).string();
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    l.status = LookupStatus::miss;
    return std::nullopt;
  }
  l.problem = check_entry(fd.get(), key, l.bytes);
  if (!l.problem.empty()) {
    remove_if_same(fd.get(), path);
    l.status = LookupStatus::corrupt;
    l.bytes.clear();
    return std::nullopt;
  }
  touch(fd.get());
  l.status = LookupStatus::hit;
  return CachedFile(fd.release(), l.bytes.size());
}

Lookup DiskCache::get(std::string_view ns, std::string_view key) const {
  Lookup l;
  open_file(ns, key, &l);  // the descriptor closes here; the checked bytes stay in l
  return l;
}

void DiskCache::remove(std::string_view ns, std::string_view key) const {
  if (enabled()) ::unlink(entry_path(ns, key).c_str());
}

std::optional<std::filesystem::path> DiskCache::put(std::string_view ns, std::string_view key,
                                                    std::string_view payload) const {
  if (!enabled()) return std::nullopt;
  std::filesystem::path final_path = entry_path(ns, key);
  if (payload.size() + kTrailerSize > settings_.size_limit) return std::nullopt;
  std::error_code ec;
  std::filesystem::create_directories(final_path.parent_path(), ec);
  // Unique per process, thread and call: O_EXCL makes a collision an error, never a shared file.
  static std::atomic<uint64_t> counter{0};
  std::string temp = (final_path.parent_path() / kTempPrefix).string() +
                     std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" +
                     std::to_string(precise_now().tv_nsec);
  Fd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  const char* failed = nullptr;
  if (!fd)
    failed = "cannot create a file in it";
  else if (!write_all(fd.get(), payload) || !write_all(fd.get(), entry_trailer(key, payload)))
    failed = "cannot write a file in it";
  if (!failed) {
    touch(fd.get());
    fd = Fd(-1);
    if (::rename(temp.c_str(), final_path.c_str()) != 0) failed = "cannot rename a file in it";
  }
  if (failed) {
    int err = errno;
    fd = Fd(-1);
    ::unlink(temp.c_str());
    warn_once(g_warned_unwritable,
              "cache directory " + settings_.dir.string() + ": " + failed + " (" +
                  std::strerror(err) +
                  "); running without the on-disk cache (set AOTGRAD_CACHE_DIR to a writable "
                  "directory, or AOTGRAD_CACHE=0)");
    return std::nullopt;
  }
  evict_to_limit(payload.size() + kTrailerSize);
  return final_path;
}

void DiskCache::evict_to_limit(uint64_t added) const {
  if (!needs_scan(settings_.dir.string(), added, settings_.size_limit)) return;
  DirLock lock(settings_.dir);
  std::vector<EntryFile> entries = scan(settings_.dir);
  uint64_t total = 0;
  for (const EntryFile& e : entries) total += e.bytes;
  if (total > settings_.size_limit) {
    std::sort(entries.begin(), entries.end(), older);
    for (const EntryFile& e : entries) {
      if (total <= settings_.size_limit) break;
      if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) total -= e.bytes;
    }
  }
  record_scan(settings_.dir.string(), total);
}

DiskStats DiskCache::stats() const {
  DiskStats s{settings_, {}};
  if (!enabled()) return s;
  for (const EntryFile& e : scan(settings_.dir)) {
    auto it = std::find_if(s.namespaces.begin(), s.namespaces.end(),
                           [&](const NamespaceStats& n) { return n.name == e.ns; });
    if (it == s.namespaces.end())
      it = s.namespaces.insert(s.namespaces.end(), NamespaceStats{e.ns, 0, 0});
    ++it->entries;
    it->bytes += e.bytes;
  }
  std::sort(s.namespaces.begin(), s.namespaces.end(),
            [](const NamespaceStats& a, const NamespaceStats& b) { return a.name < b.name; });
  return s;
}

uint64_t DiskCache::clear() const {
  if (!enabled()) return 0;
  DirLock lock(settings_.dir);
  uint64_t removed = 0;
  for (const EntryFile& e : scan(settings_.dir))
    if (::unlink(e.path.c_str()) == 0) ++removed;
  record_scan(settings_.dir.string(), 0);
  return removed;
}

}  // namespace aotgrad::cache
