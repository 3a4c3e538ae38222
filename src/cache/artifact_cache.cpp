// ArtifactCache (cache/artifact_cache.h). Reading guide: the build-id reader, the key, then
// lower(): capture → key → disk lookup → (hit: deserialize, check, replay the graph hook) or
// (miss: finish lowering, serialize, store).
#include "cache/artifact_cache.h"

#include <elf.h>
#include <link.h>

#include <cstring>

#include "aot/log.h"
#include "aotgrad/version.h"
#include "cache/hash.h"
#include "graph/printer.h"

namespace aotgrad::cache {
namespace {

constexpr char kNamespace[] = "artifacts";

struct BuildIdSearch {
  uintptr_t address = 0;
  bool found = false;
  std::optional<std::string> id;
};

std::string hex(const unsigned char* bytes, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[bytes[i] >> 4];
    s += kDigits[bytes[i] & 0xf];
  }
  return s;
}

// The NT_GNU_BUILD_ID note among the notes of one PT_NOTE segment.
std::optional<std::string> find_build_id(const char* p, const char* end, size_t align) {
  auto up = [align](size_t n) { return (n + align - 1) / align * align; };
  while (p + sizeof(ElfW(Nhdr)) <= end) {
    ElfW(Nhdr) note;
    std::memcpy(&note, p, sizeof note);
    const char* name = p + sizeof note;
    const char* desc = name + up(note.n_namesz);
    if (desc + note.n_descsz > end) break;
    if (note.n_type == NT_GNU_BUILD_ID && note.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0)
      return hex(reinterpret_cast<const unsigned char*>(desc), note.n_descsz);
    p = desc + up(note.n_descsz);
  }
  return std::nullopt;
}

int visit_module(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<BuildIdSearch*>(data);
  bool contains = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && s->address >= start && s->address < start + ph.p_memsz)
      contains = true;
  }
  if (!contains) return 0;
  s->found = true;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum && !s->id; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    s->id = find_build_id(p, p + ph.p_memsz, ph.p_align == 8 ? 8 : 4);
  }
  return 1;
}

void field(std::string& key, std::string_view bytes) {
  uint64_t n = bytes.size();
  key.append(reinterpret_cast<const char*>(&n), sizeof n);
  key.append(bytes);
}

void log(const AotConfig& config, const char* event, const std::string& entry,
         const std::string& more = "") {
  if (aot::log_enabled(aot::LogTopic::cache))
    aot::log_line("cache fn=" + config.name + " event=" + event + " entry=" + entry + more);
}

// On a hit the graphs were not made here; show the stored ones to the hook in lowering's order,
// so AOTGRAD_DUMP and AOTGRAD_LOG=graphs see the same graphs either way.
void replay(const aot::Artifact& a, const aot::GraphHook& on_graph) {
  if (!on_graph) return;
  if (a.is_inference) {
    on_graph("inference", a.inference);
    return;
  }
  on_graph("joint", a.joint.get());
  on_graph("forward", a.forward);
  on_graph("backward", a.backward);
}

// Why a stored artifact cannot serve this call, or "": a hash collision or a bug elsewhere must
// not run someone else's graphs.
std::string mismatch(const aot::Artifact& stored, const aot::Captured& c) {
  if (!(stored.config == c.artifact.config)) return "its config differs from the call's";
  if (aot::guard_key(stored.guards) != aot::guard_key(c.artifact.guards))
    return "its guards differ from the call's";
  return "";
}

}  // namespace

std::optional<std::string> module_build_id(const void* address) {
  BuildIdSearch s;
  s.address = reinterpret_cast<uintptr_t>(address);
  dl_iterate_phdr(visit_module, &s);
  return s.id;
}

KeyVersions KeyVersions::current() {
  // Once per process: the module holding this function holds aotgrad's lowering code too (one
  // library, static or shared).
  static const std::string id =
      module_build_id(reinterpret_cast<const void*>(&module_build_id)).value_or("");
  return {AOTGRAD_VERSION, aot::kArtifactFormatVersion, id};
}

std::string bypass_reason(const KeyVersions& versions, const AotConfig& config,
                          const aot::Captured& c) {
  if (versions.build_id.empty())
    return "the aotgrad module has no ELF build-id (link with --build-id), so a rebuilt library "
           "could not be told from this one";
  // User code shapes the artifact where the key cannot see it: a partition_fn or decomposition
  // (compiler callables do not matter: they run at instantiate, after the cache), a custom op's
  // meta/VJP/recompute class, a custom autograd Function's backward (a process-local id).
  if (config.partition_fn) return "AotConfig::partition_fn is user code the key cannot see";
  if (!config.decompositions.empty())
    return "AotConfig::decompositions are user code the key cannot see";
  for (const graph::Node& n : c.forward.graph.nodes()) {
    std::string_view name = n.op->name;
    bool builtin = name.rfind("aten.", 0) == 0 || name.rfind("aotgrad.", 0) == 0;
    if (!builtin || name == "aotgrad.autograd_function.default")
      return "the graph calls " + std::string(name) +
             ", user code (a custom op or Function) the key cannot see";
  }
  return "";
}

ArtifactCache::ArtifactCache(DiskCache disk, KeyVersions versions)
    : disk_(std::move(disk)), versions_(std::move(versions)) {}

ArtifactCache ArtifactCache::from_environment() {
  return ArtifactCache(DiskCache::from_environment(), KeyVersions::current());
}

std::string ArtifactCache::key(const aot::Captured& c) const {
  std::string k = "aotgrad artifact cache key 2";
  field(k, versions_.aotgrad_version);
  field(k, std::to_string(versions_.artifact_format));
  field(k, versions_.build_id);
  // Config, guards and meta in the artifact's own exact byte form.
  field(k, aot::serialize_artifact(c.artifact));
  field(k, graph::print_graph(c.forward.graph));
  std::string flags;
  for (bool b : c.forward.value_requires_grad) flags += b ? '1' : '0';
  flags += c.forward.needs_autograd ? 'A' : 'I';
  field(k, flags);
  std::string budgets;
  for (double b : c.forward.node_budgets)
    budgets.append(reinterpret_cast<const char*>(&b), sizeof b);
  field(k, budgets);
  // The errors eager's backward would raise (an inner autograd::grad without retain_graph freed
  // what a later backward reads): tracer state the graph text does not show, set on the artifact
  // only after this key is made.
  std::string errors;
  for (const aot::BackwardError& e : c.forward.backward_errors)
    errors += std::to_string(e.at.index) + ':' + std::to_string(e.message.size()) + ':' + e.message;
  field(k, errors);
  return k;
}

CachedLowering ArtifactCache::lower(const aot::LowerInput& input, const AotConfig& config,
                                    const aot::GraphHook& on_graph) const {
  aot::Captured c = aot::capture(input, config);
  auto finish = [&](aot::Captured&& captured, DiskEvent event) {
    return CachedLowering{std::make_shared<const aot::Artifact>(
                              aot::finish_lowering(std::move(captured), config, on_graph)),
                          event};
  };
  if (!disk_.enabled()) return finish(std::move(c), DiskEvent::off);
  if (std::string why = bypass_reason(versions_, config, c); !why.empty()) {
    log(config, "disk_bypass", "-", " reason=\"" + why + "\"");
    return finish(std::move(c), DiskEvent::bypass);
  }
  std::string k = key(c);
  std::string entry = hash128_hex(k);
  Lookup found = disk_.get(kNamespace, k);
  if (found.status == LookupStatus::hit) {
    std::string problem;
    try {
      auto stored = std::make_shared<const aot::Artifact>(
          aot::deserialize_artifact(found.bytes, aot::ArtifactSource::own_cache));
      problem = mismatch(*stored, c);
      if (problem.empty()) {
        log(config, "disk_hit", entry);
        replay(*stored, on_graph);
        return {std::move(stored), DiskEvent::hit};
      }
    } catch (const ArtifactError& e) {
      problem = e.what();
    }
    disk_.remove(kNamespace, k);
    log(config, "disk_corrupt", entry, " reason=\"" + problem + "\"");
  } else if (found.status == LookupStatus::corrupt) {
    log(config, "disk_corrupt", entry, " reason=\"" + found.problem + "\"");
  } else {
    log(config, "disk_miss", entry);
  }
  CachedLowering made = finish(std::move(c), DiskEvent::miss);
  if (disk_.put(kNamespace, k, aot::serialize_artifact(*made.artifact)))
    log(config, "disk_store", entry);
  return made;
}

}  // namespace aotgrad::cache
