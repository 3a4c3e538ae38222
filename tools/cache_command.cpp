// `aotgrad cache stats | clear` (tools/cache_command.h).
#include "cache_command.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iostream>
#include <string>

#include "cache/disk_cache.h"
#include "cli_args.h"

namespace aotgrad::tools {
namespace {

constexpr const char* kCacheUsage = R"(usage: aotgrad cache stats | clear

stats  prints the on-disk cache's directory, its size limit, and the entries and bytes of each
       namespace (artifacts: lowered graphs; cpp: compiled code) and in total.
clear  removes every entry.
The cache lives in AOTGRAD_CACHE_DIR (default $XDG_CACHE_HOME/aotgrad, else ~/.cache/aotgrad);
AOTGRAD_CACHE_SIZE_LIMIT bounds it (default 1G); AOTGRAD_CACHE=0 turns it off (docs/caching.md).
)";

// The namespaces aotgrad writes, listed even when empty.
constexpr const char* kKnownNamespaces[] = {"artifacts", "cpp"};

std::string human(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
  return buf;
}

int stats(const cache::DiskCache& disk) {
  cache::DiskStats s = disk.stats();
  if (!s.settings.enabled) {
    std::cout << "cache: off (" << s.settings.disabled_reason << ")\n";
    return 0;
  }
  std::cout << "directory: " << s.settings.dir.string() << "\n"
            << "limit: " << s.settings.size_limit << " bytes (" << human(s.settings.size_limit)
            << ")\n";
  std::vector<cache::NamespaceStats> rows;
  for (const char* name : kKnownNamespaces) rows.push_back({name, 0, 0});
  for (const cache::NamespaceStats& n : s.namespaces) {
    auto row = std::find_if(rows.begin(), rows.end(),
                            [&](const cache::NamespaceStats& r) { return r.name == n.name; });
    if (row != rows.end())
      *row = n;
    else
      rows.push_back(n);
  }
  uint64_t entries = 0, bytes = 0;
  for (const cache::NamespaceStats& r : rows) {
    std::cout << r.name << ": " << r.entries << " entries, " << r.bytes << " bytes ("
              << human(r.bytes) << ")\n";
    entries += r.entries;
    bytes += r.bytes;
  }
  std::cout << "total: " << entries << " entries, " << bytes << " bytes (" << human(bytes) << ")\n";
  return 0;
}

}  // namespace

int cache_command(const std::vector<std::string>& args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << kCacheUsage;
    return 0;
  }
  if (args.size() != 1 || (args[0] != "stats" && args[0] != "clear")) {
    std::string got = args.empty() ? std::string("nothing") : "\"" + args[0] + "\"";
    if (args.size() > 1 && (args[0] == "stats" || args[0] == "clear"))
      got = "an extra argument \"" + args[1] + "\"";
    std::cerr << cli::one_line("aotgrad: cache takes stats or clear, got " + got +
                               " (aotgrad cache --help shows the usage)")
              << "\n";
    return 2;
  }
  try {
    cache::DiskCache disk = cache::DiskCache::from_environment();
    if (args[0] == "stats") return stats(disk);
    if (!disk.enabled()) {
      std::cout << "cache: off (" << disk.settings().disabled_reason << "); nothing to clear\n";
      return 0;
    }
    uint64_t removed = disk.clear();
    std::cout << "removed " << removed << " entries from " << disk.settings().dir.string() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << cli::one_line(std::string("aotgrad: error: ") + e.what()) << "\n";
    return 1;
  }
}

}  // namespace aotgrad::tools
