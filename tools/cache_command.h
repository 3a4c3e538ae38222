// `aotgrad cache stats | clear`: the on-disk cache (src/cache/disk_cache.h) from the command line
// (docs/cli.md, docs/caching.md).
#pragma once

#include <string>
#include <vector>

namespace aotgrad::tools {

// Runs `aotgrad cache ARGS...`; returns the exit status (0 ok, 1 the cache could not be read or
// cleared, 2 bad usage). Prints results on stdout, one-line errors on stderr.
int cache_command(const std::vector<std::string>& args);

}  // namespace aotgrad::tools
