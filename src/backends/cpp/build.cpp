#include "backends/cpp/build.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <vector>

#include "aotgrad/version.h"
#include "backends/cpp/process.h"
#include "cache/disk_cache.h"
#include "cache/hash.h"

namespace aotgrad::backends::cpp {
namespace {

namespace fs = std::filesystem;

// `text` split at spaces (the compile flags hold no quoted words).
std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(' ', at), text.size());
    if (end > at) out.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

struct Toolchain {
  std::string compiler;  // the command
  std::string version;   // first line of `compiler --version`
  std::string cpu;       // the CPU's model and feature flags (-march=native depends on them)
};

// What `compiler` names on disk: the file it resolves to (through $PATH when it has no '/',
// then through symbolic links) with its device, inode, size and modification time, as one string;
// empty when no executable file is found (the compiler is then asked, and its failure reported).
std::string executable_identity(const std::string& compiler) {
  auto identity = [](const fs::path& candidate) -> std::string {
    struct stat st;
    if (::stat(candidate.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ::access(candidate.c_str(), X_OK) != 0)
      return {};
    std::error_code ec;
    const fs::path target = fs::canonical(candidate, ec);
    if (ec) return {};
    return target.string() + '\0' + std::to_string(st.st_dev) + ':' + std::to_string(st.st_ino) +
           ':' + std::to_string(st.st_size) + ':' + std::to_string(st.st_mtim.tv_sec) + '.' +
           std::to_string(st.st_mtim.tv_nsec);
  };
  if (compiler.empty()) return {};
  if (compiler.find('/') != std::string::npos) return identity(compiler);
  const char* path = std::getenv("PATH");
  std::string_view dirs = path ? path : "";
  while (true) {  // the shell's search: the first executable match; an empty entry is "."
    const size_t colon = dirs.find(':');
    const std::string_view dir = dirs.substr(0, colon);
    if (std::string id = identity(fs::path(dir.empty() ? "." : std::string(dir)) / compiler);
        !id.empty())
      return id;
    if (colon == std::string_view::npos) return {};
    dirs.remove_prefix(colon + 1);
  }
}

}  // namespace

std::string compiler_version(const std::string& compiler) {
  const std::string identity = executable_identity(compiler);
  const cache::DiskCache disk = cache::DiskCache::from_environment();
  const std::string key = std::string("aotgrad toolchain\0", 18) + compiler + '\0' + identity;
  if (!identity.empty()) {
    cache::Lookup hit = disk.get("toolchain", key);  // checked: a corrupt entry is a miss
    if (hit.status == cache::LookupStatus::hit && !hit.bytes.empty() && hit.bytes.size() < 4096 &&
        hit.bytes.find('\n') == std::string::npos)
      return hit.bytes;
  }
  const auto [rc, out, timed_out] =
      run_process({compiler, "--version"}, /*with_stderr=*/false, std::chrono::seconds(60));
  if (rc != 0 || out.empty())
    throw std::runtime_error("cpp backend: the C++ compiler '" + compiler +
                             "' cannot be run (set AOTGRAD_CXX to a working g++ or clang++)");
  std::string version = out.substr(0, out.find('\n'));
  if (!identity.empty() && !version.empty() && version.size() < 4096)
    disk.put("toolchain", key, version);
  return version;
}

namespace {

Toolchain find_toolchain(const std::string& compiler) {
  Toolchain t;
  t.compiler = compiler;
  t.version = compiler_version(compiler);
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) {
      t.cpu += line + "\n";
      if (line.rfind("flags", 0) == 0) break;
    }
  return t;
}

// Found once per process and compiler command ($AOTGRAD_CXX, else c++); its version comes from
// the disk cache when the compiler file is unchanged (compiler_version).
const Toolchain& toolchain() {
  static std::mutex mutex;
  static std::map<std::string, Toolchain> found;
  const char* env = std::getenv("AOTGRAD_CXX");
  std::string compiler = env && *env ? env : "c++";
  std::lock_guard lock(mutex);
  auto it = found.find(compiler);
  if (it == found.end()) it = found.emplace(compiler, find_toolchain(compiler)).first;
  return it->second;  // std::map nodes stay put
}

// A fresh private directory for one compiler run (mkdtemp: no other thread or process uses it).
fs::path make_work_directory() {
  std::string templ = (fs::temp_directory_path() / "aotgrad-cpp-XXXXXX").string();
  if (!mkdtemp(templ.data()))
    throw std::runtime_error("cpp backend: cannot create a directory under " +
                             fs::temp_directory_path().string() + " (" + std::strerror(errno) +
                             "); set TMPDIR to a writable one");
  return templ;
}

std::string read_file(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_file(const fs::path& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
  if (!f.flush()) throw std::runtime_error("cpp backend: cannot write " + path.string());
}

// The first line of the compiler's diagnostics that says "error", for the one-line message.
std::string first_error(const std::string& log) {
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line))
    if (line.find("error") != std::string::npos) return line.substr(0, 200);
  return log.substr(0, std::min<size_t>(log.find('\n'), 200));
}

}  // namespace

bool compiler_runs() {
  try {
    toolchain();
    return true;
  } catch (const std::runtime_error&) {
    return false;
  }
}

const std::string& compile_flags() {
  // -fno-math-errno lets sqrt and friends vectorize; no -ffast-math: NaN and inf must behave as
  // in the eager kernels (relu of NaN, comparisons). Full-width vectors: gcc's default for
  // AVX-512 CPUs is 256-bit, which halves the throughput of the math-heavy loops (exp, erf in
  // the generated code; measured: gelu 1.5x, masked softmax 1.5x faster at 512).
  // A process built with AddressSanitizer (the asan preset) checks the generated kernels too,
  // as does any process run with AOTGRAD_CPP_SANITIZE=1: out-of-bounds loads and stores of a
  // kernel and undefined behaviour in it stop the process with the sanitizer's report. The
  // flags are part of the cache key, so sanitized and plain objects never mix.
  static const std::string flags = [] {
    std::string f =
        "-std=c++17 -O3 -march=native -mprefer-vector-width=512 -fno-math-errno -fopenmp -fPIC "
        "-shared -w";
    const char* env = std::getenv("AOTGRAD_CPP_SANITIZE");
    bool sanitize = env && std::string_view(env) == "1";
#if defined(__SANITIZE_ADDRESS__)
    sanitize = true;
#endif
    if (sanitize)
      f += " -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer";
    return f;
  }();
  return flags;
}

namespace {

// Compiles `source` in a private directory and returns the object's bytes; the directory is
// removed unless the compiler failed (its source and log are kept for the error message).
std::string compile(const Toolchain& tc, const std::string& source, std::chrono::seconds limit) {
  fs::path dir = make_work_directory();
  fs::path src = dir / "kernels.cpp", so = dir / "kernels.so", log = dir / "log.txt";
  write_file(src, source);
  std::vector<std::string> argv = {tc.compiler, src.string(), "-o", so.string()};
  for (std::string& flag : words(compile_flags())) argv.push_back(std::move(flag));
  const ProcessResult run = run_process(argv, /*with_stderr=*/true, limit);
  const bool failed = run.timed_out || run.status != 0 || !fs::exists(so);
  if (failed) std::ofstream(log, std::ios::binary) << run.output;  // kept beside the source
  if (run.timed_out)
    throw std::runtime_error("cpp backend: '" + tc.compiler + "' was still compiling after " +
                             std::to_string(limit.count()) +
                             " s and was stopped (raise AOTGRAD_CXX_TIMEOUT, in seconds, for "
                             "larger graphs); source kept at " +
                             src.string());
  if (failed) {
    const std::string why =
        run.status < 0 && run.output.empty() ? "it could not be started" : first_error(run.output);
    throw std::runtime_error("cpp backend: '" + tc.compiler + "' failed on generated code (" + why +
                             "); source kept at " + src.string());
  }
  std::string bytes = read_file(so);
  std::error_code ec;
  fs::remove_all(dir, ec);
  return bytes;
}

// Loads `bytes` through a private file named after their content, removed once loaded (the
// mapping stays). The name matters: dlopen returns an already loaded library whose path equals
// the one asked for, without opening the file, so a path must never name two contents (a
// descriptor path /proc/self/fd/N would, once N is reused).
std::shared_ptr<const SharedObject> load_bytes(const std::string& bytes, const std::string& name) {
  fs::path dir = make_work_directory();
  fs::path so = dir / ("k" + name + ".so");
  write_file(so, bytes);
  auto object = std::make_shared<const SharedObject>(so.string());
  std::error_code ec;
  fs::remove_all(dir, ec);
  return object;
}

// Loaded objects of this process, by name (the hash of their key): a graph compiled again
// (another specialization, a recompile) reuses the mapping while some program still holds it.
struct LoadedObjects {
  std::mutex mutex;
  std::map<std::string, std::weak_ptr<const SharedObject>> by_name;
};
LoadedObjects& loaded_objects() {
  static LoadedObjects loaded;
  return loaded;
}

// $AOTGRAD_CXX_TIMEOUT, the C++ compiler's time limit per graph, in seconds (default 600).
std::chrono::seconds compile_time_limit() {
  constexpr int64_t kDefault = 600, kMost = int64_t(1) << 31;
  const char* env = std::getenv("AOTGRAD_CXX_TIMEOUT");
  if (!env || !*env) return std::chrono::seconds(kDefault);
  int64_t seconds = 0;
  bool ok = std::string_view(env).size() <= 10;
  for (const char* c = env; ok && *c; ++c) {
    ok = *c >= '0' && *c <= '9';
    seconds = seconds * 10 + (*c - '0');
  }
  if (!ok || seconds < 1 || seconds > kMost)
    throw std::runtime_error(
        "cpp backend: AOTGRAD_CXX_TIMEOUT must be a whole number of seconds from 1 to " +
        std::to_string(kMost) + " (the C++ compiler's time limit per graph; default " +
        std::to_string(kDefault) + "); unset it or set it to one");
  return std::chrono::seconds(seconds);
}

}  // namespace

ObjectFuture start_shared_object(const std::string& source) {
  const Toolchain& tc = toolchain();  // a compiler that cannot run throws here, on this thread
  const std::string key = std::string("aotgrad cpp object\0", 19) + AOTGRAD_VERSION + '\0' +
                          tc.version + '\0' + compile_flags() + '\0' + tc.cpu + '\0' + source;
  const std::string name = cache::hash128_hex(key);
  auto ready = [](std::shared_ptr<const SharedObject> object) {
    std::promise<std::shared_ptr<const SharedObject>> p;
    p.set_value(std::move(object));
    return p.get_future().share();
  };
  LoadedObjects& loaded = loaded_objects();
  auto remember = [&loaded, name](std::shared_ptr<const SharedObject> object) {
    std::lock_guard lock(loaded.mutex);
    if (loaded.by_name.size() > 1024)  // drop the expired ones now and then
      std::erase_if(loaded.by_name, [](const auto& e) { return e.second.expired(); });
    loaded.by_name[name] = object;
    return object;
  };
  {
    std::lock_guard lock(loaded.mutex);
    if (auto it = loaded.by_name.find(name); it != loaded.by_name.end())
      if (auto object = it->second.lock()) return ready(std::move(object));
  }
  // A cached object loads here (about a millisecond); only the compiler runs on another thread.
  // The environment is read on the caller's thread; the task reads only $TMPDIR, and the compiler
  // it starts inherits the environment (and finds itself through $PATH) as it is at that moment.
  const cache::DiskCache disk = cache::DiskCache::from_environment();
  cache::Lookup hit = disk.get("cpp", key);  // checked: a corrupt entry is a miss
  if (hit.status == cache::LookupStatus::hit) return ready(remember(load_bytes(hit.bytes, name)));
  const std::chrono::seconds limit = compile_time_limit();  // bad values are thrown here
  auto task = [tc = &tc, disk, key, name, source, remember, limit] {
    std::string bytes = compile(*tc, source, limit);
    disk.put("cpp", key, bytes);
    return remember(load_bytes(bytes, name));
  };
  try {
    return std::async(std::launch::async, std::move(task)).share();
  } catch (const std::system_error&) {  // no thread to be had: build on this one
    return std::async(std::launch::deferred, std::move(task)).share();
  }
}

std::shared_ptr<const SharedObject> load_shared_object(const std::string& source) {
  return start_shared_object(source).get();
}

namespace {
// glibc's loader takes its own lock, but ThreadSanitizer cannot see it and reported a race in
// dlclose (_dl_close_worker) against a dlopen of another thread about once in eight runs of the
// concurrent-build test. Loading is rare and slow anyway: one lock of ours orders it for both.
std::mutex& loader_mutex() {
  static std::mutex m;
  return m;
}
}  // namespace

SharedObject::SharedObject(const std::string& path) : path_(path) {
  std::lock_guard lock(loader_mutex());
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* err = dlerror();
    throw std::runtime_error("cpp backend: cannot load " + path + ": " + (err ? err : "?"));
  }
}

SharedObject::~SharedObject() {
  std::lock_guard lock(loader_mutex());
  if (handle_) dlclose(handle_);
}

void* SharedObject::symbol(const std::string& name) const {
  std::lock_guard lock(loader_mutex());
  void* p = dlsym(handle_, name.c_str());
  if (!p) throw std::runtime_error("cpp backend: symbol " + name + " missing from " + path_);
  return p;
}

}  // namespace aotgrad::backends::cpp
