// The on-disk cache: byte blobs under a directory, by namespace and key, that survive restarts.
// The artifact cache (cache/artifact_cache.h) stores lowered Artifacts in "artifacts"; a code
// generator stores its shared objects in "cpp".
//
// Where and how much (read from the environment by CacheSettings::from_environment, at each use,
// never per call of a compiled function):
//   AOTGRAD_CACHE=0 (or false, off, no)  no cache: every get misses, put stores nothing
//   AOTGRAD_CACHE_DIR                    the directory; default $XDG_CACHE_HOME/aotgrad, else
//                                        $HOME/.cache/aotgrad (neither set: no cache)
//   AOTGRAD_CACHE_SIZE_LIMIT             bytes of entries kept, with an optional K, M or G
//                                        (binary) suffix; default 1G
//
// Layout: DIR/NAMESPACE/HASH, HASH = 32 hex digits of XXH3-128 of the key. Each entry is its
// payload followed by a 40-byte trailer: magic "AOTGCACH", u32 format version, u32 zero, u64
// payload length, u64 XXH3-64 of the key, u64 XXH3-64 of the payload (little-endian). The trailer
// sits after the payload so that an entry holding a shared object is itself a loadable ELF file
// (open_file): dlopen reads the program headers at the start and ignores bytes past the segments.
//
// Guarantees:
//  - Writes are atomic: a temporary file in the namespace directory, renamed over the entry.
//    Readers see the old entry, the new one, or none; never a torn one.
//  - A truncated, corrupt or foreign entry (wrong magic, version, length, key or checksum) is
//    removed and reported as LookupStatus::corrupt; its bytes are never returned.
//  - The size limit: when a put may take the directory past it, the least recently used entries
//    (by modification time, which a hit refreshes) are removed first, under an flock on
//    DIR/.lock so that processes evict one at a time. To spare most puts a scan of every entry,
//    a process keeps an estimate of the total (its last scan plus its own puts since) and
//    scans when the estimate passes the limit, or every 32 puts to see other processes' writes;
//    so with several processes writing at once the total may pass the limit until one scans.
//  - A directory that cannot be written degrades to no cache, with one warning line on stderr
//    per process.
//  - Any number of threads and processes may use one directory at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace aotgrad::cache {

constexpr uint64_t kDefaultSizeLimit = uint64_t{1} << 30;
constexpr uint32_t kEntryFormatVersion = 1;

struct CacheSettings {
  bool enabled = false;
  std::filesystem::path dir;
  uint64_t size_limit = kDefaultSizeLimit;
  std::string disabled_reason;  // why not enabled, for `aotgrad cache stats`

  static CacheSettings from_environment();
};

enum class LookupStatus { hit, miss, corrupt, disabled };

struct Lookup {
  LookupStatus status = LookupStatus::miss;
  std::string bytes;    // the payload, on a hit
  std::string problem;  // on corrupt: what was wrong, one line
};

// An entry held open: its descriptor, whose payload was checked, so that a later rename over the
// entry's name cannot change what the caller then reads or maps. path() names the open file
// (/proc/self/fd/N). Not for dlopen: dlopen returns an already loaded library of the same path
// without opening the file, and N is reused once closed (the cpp backend loads a copy named
// after its content instead).
class CachedFile {
 public:
  CachedFile(int fd, uint64_t payload_size) : fd_(fd), payload_size_(payload_size) {}
  CachedFile(CachedFile&& other) noexcept;
  CachedFile& operator=(CachedFile&& other) noexcept;
  CachedFile(const CachedFile&) = delete;
  CachedFile& operator=(const CachedFile&) = delete;
  ~CachedFile();
  std::string path() const;
  uint64_t payload_size() const { return payload_size_; }

 private:
  int fd_ = -1;
  uint64_t payload_size_ = 0;
};

struct NamespaceStats {
  std::string name;
  uint64_t entries = 0, bytes = 0;
};

struct DiskStats {
  CacheSettings settings;
  std::vector<NamespaceStats> namespaces;  // by name
};

// Holds only its settings (plus a process-wide size estimate per directory, under a mutex):
// cheap to make, and every method may be called from any number of threads and processes at once.
class DiskCache {
 public:
  explicit DiskCache(CacheSettings settings);
  static DiskCache from_environment() { return DiskCache(CacheSettings::from_environment()); }

  bool enabled() const { return settings_.enabled; }
  const CacheSettings& settings() const { return settings_; }

  // `ns` is a lowercase name ([a-z0-9_-]+; anything else throws std::invalid_argument); `key`
  // any bytes. A hit refreshes the entry's time (least recently used goes first).
  Lookup get(std::string_view ns, std::string_view key) const;
  // The same lookup, returning the checked entry held open instead of its bytes.
  std::optional<CachedFile> open_file(std::string_view ns, std::string_view key,
                                      Lookup* outcome = nullptr) const;
  // Stores `payload` under the key (replacing what was there), then evicts down to the limit.
  // Returns the entry's path, or nothing when the cache is disabled, the payload alone exceeds
  // the limit, or the directory cannot be written (warned once).
  std::optional<std::filesystem::path> put(std::string_view ns, std::string_view key,
                                           std::string_view payload) const;
  void remove(std::string_view ns, std::string_view key) const;

  DiskStats stats() const;
  // Removes every entry of every namespace; returns how many.
  uint64_t clear() const;
  // Where the entry for `key` lives (it may not exist).
  std::filesystem::path entry_path(std::string_view ns, std::string_view key) const;

 private:
  void evict_to_limit(uint64_t added) const;
  CacheSettings settings_;
};

// What the trailer of an entry must hold for `key` and `payload` (exposed for tests).
std::string entry_trailer(std::string_view key, std::string_view payload,
                          uint32_t format_version = kEntryFormatVersion);

}  // namespace aotgrad::cache
