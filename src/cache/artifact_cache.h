// The AOTAutogradCache: lowered Artifacts kept on disk (cache/disk_cache.h, namespace
// "artifacts"), so that a new process compiling the same function skips the joint graph, the
// partitioner and their checks, and instantiates the stored artifact instead. On by default, as
// PyTorch's; AOTGRAD_CACHE=0 turns it off (docs/caching.md).
//
// What the key covers (everything the artifact depends on):
//  - the captured forward: the call is traced (or the graph file loaded) first, and the key holds
//    the traced graph's text (ops, attributes, constants' values, descriptors), which values
//    require grad, whether autograd is needed and the memory-budget regions;
//  - the front end's part of the artifact in its serialized form: the guards (every input's
//    dtype, geometry, requires_grad, aliasing; grad mode; the non-tensor arguments), the
//    ViewAndMutationMeta and the config fields that shape lowering (name, partitioner, budget,
//    keep_inference_input_mutations, compiler names);
//  - the aotgrad version, the artifact format version and the ELF build-id of the module that
//    holds aotgrad's code, so a rebuilt library (a changed op rule, partitioner or format) misses.
//
// Why the traced graph and not the C++ function: a function's code (its type, or the build-id of
// its module) does not identify the graph it traces. Lambdas with one type capture different
// numbers, read globals, or (aot_module) walk a module whose layers are decided at run time; all
// of that is baked into the graph. Keying on the graph is exact; the trace it costs is the
// cheapest stage (docs/caching.md has the numbers).
//
// Not cached (a bypass, logged): no build-id could be read for the aotgrad module.
// For the lead to wire at merge: a config with a user callable compiler, and graphs with user
// (custom) ops, whose code the key cannot see, must bypass too (bypass_reason below).
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "aot/lower.h"
#include "cache/disk_cache.h"

namespace aotgrad::cache {

// The version part of the key. Tests fake a bump by changing a field.
struct KeyVersions {
  std::string aotgrad_version;
  uint32_t artifact_format = 0;
  std::string build_id;  // hex; empty: artifacts are not cached
  static KeyVersions current();
};

// The ELF build-id (hex) of the loaded module whose code contains `address`, if it has one.
std::optional<std::string> module_build_id(const void* address);

enum class DiskEvent { off, hit, miss, bypass };

struct CachedLowering {
  std::shared_ptr<const aot::Artifact> artifact;
  DiskEvent event = DiskEvent::off;
};

// Thread-safe; cheap to make (from_environment reads the environment once).
class ArtifactCache {
 public:
  ArtifactCache(DiskCache disk, KeyVersions versions);
  static ArtifactCache from_environment();

  // aot::lower through the cache. The input is always captured (traced or loaded); on a hit the
  // stored artifact is returned (`on_graph` sees its graphs, as lowering would have shown them);
  // otherwise lowering finishes and the artifact is stored. A stored entry that is damaged, or
  // does not match the call, is removed and lowered again. AOTGRAD_LOG=cache logs
  // disk_hit / disk_miss / disk_store / disk_corrupt / disk_bypass lines.
  CachedLowering lower(const aot::LowerInput& input, const AotConfig& config,
                       const aot::GraphHook& on_graph = {}) const;

  // The key of a captured call.
  std::string key(const aot::Captured& captured) const;
  const DiskCache& disk() const { return disk_; }

 private:
  DiskCache disk_;
  KeyVersions versions_;
};

// Why a lowering must not be cached, or "".
std::string bypass_reason(const KeyVersions& versions, const AotConfig& config,
                          const aot::Captured& captured);

}  // namespace aotgrad::cache
