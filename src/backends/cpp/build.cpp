#include "backends/cpp/build.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include "aotgrad/version.h"

namespace aotgrad::backends::cpp {
namespace {

namespace fs = std::filesystem;

// Two FNV-1a passes with different offsets: 128 bits, enough to name build products (the cache
// of src/cache/ adds a checksum of the file itself).
std::string content_hash(const std::string& text) {
  auto fnv = [&](uint64_t h) {
    for (unsigned char c : text) {
      h ^= c;
      h *= 0x100000001b3ULL;
    }
    return h;
  };
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx",
                static_cast<unsigned long long>(fnv(0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(fnv(0x84222325cbf29ce4ULL)));
  return buf;
}

// Runs `command` through the shell; returns its exit status and its stdout.
std::pair<int, std::string> run_command(const std::string& command) {
  std::string out;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {-1, out};
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct Toolchain {
  std::string compiler;  // the command
  std::string version;   // first line of `compiler --version`
  std::string cpu;       // the CPU's model and feature flags (-march=native depends on them)
};

Toolchain find_toolchain(const std::string& compiler) {
  Toolchain t;
  t.compiler = compiler;
  auto [rc, out] = run_command(shell_quote(t.compiler) + " --version 2>/dev/null");
  if (rc != 0 || out.empty())
    throw std::runtime_error("cpp backend: the C++ compiler '" + t.compiler +
                             "' cannot be run (set AOTGRAD_CXX to a working g++ or clang++)");
  t.version = out.substr(0, out.find('\n'));
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line))
    if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) {
      t.cpu += line + "\n";
      if (line.rfind("flags", 0) == 0) break;
    }
  return t;
}

// Found once per compiler command ($AOTGRAD_CXX, else c++): asking it costs a process start.
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

fs::path build_directory() {
  fs::path dir;
  if (const char* d = std::getenv("AOTGRAD_CACHE_DIR"); d && *d)
    dir = d;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    dir = fs::path(x) / "aotgrad";
  else if (const char* h = std::getenv("HOME"); h && *h)
    dir = fs::path(h) / ".cache" / "aotgrad";
  else
    dir = fs::temp_directory_path() / ("aotgrad-" + std::to_string(getuid()));
  dir /= "cpp";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("cpp backend: cannot create the build directory " + dir.string() +
                             " (" + ec.message() + "); set AOTGRAD_CACHE_DIR to a writable one");
  return dir;
}

// A name no other thread or process uses for its temporary files.
std::string unique_suffix() {
  static std::atomic<uint64_t> counter{0};
  return ".tmp" + std::to_string(getpid()) + "_" + std::to_string(counter.fetch_add(1));
}

void write_atomically(const fs::path& path, const std::string& text) {
  fs::path tmp = path.string() + unique_suffix();
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f.flush()) throw std::runtime_error("cpp backend: cannot write " + tmp.string());
  }
  fs::rename(tmp, path);
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

const std::string& compile_flags() {
  // -fno-math-errno lets sqrt and friends vectorize; no -ffast-math: NaN and inf must behave as
  // in the eager kernels (relu of NaN, comparisons).
  static const std::string flags =
      "-std=c++17 -O3 -march=native -fno-math-errno -fopenmp -fPIC -shared -w -lmvec";
  return flags;
}

std::string build_shared_object(const std::string& source) {
  const Toolchain& tc = toolchain();
  std::string key = content_hash(source + '\0' + tc.version + '\0' + compile_flags() + '\0' +
                                 tc.cpu + '\0' + AOTGRAD_VERSION);
  fs::path dir = build_directory();
  fs::path so = dir / ("k" + key + ".so");
  if (fs::exists(so)) return so.string();
  fs::path src = dir / ("k" + key + ".cpp");
  write_atomically(src, source);
  fs::path tmp_so = so.string() + unique_suffix();
  fs::path log = tmp_so.string() + ".log";
  // Libraries (-lmvec) must follow the source for linkers that default to --as-needed.
  std::string cmd = shell_quote(tc.compiler) + " " + shell_quote(src.string()) + " -o " +
                    shell_quote(tmp_so.string()) + " " + compile_flags() + " > " +
                    shell_quote(log.string()) + " 2>&1";
  int rc = std::system(cmd.c_str());
  std::string diagnostics;
  {
    std::ifstream f(log);
    std::stringstream ss;
    ss << f.rdbuf();
    diagnostics = ss.str();
  }
  std::error_code ec;
  fs::remove(log, ec);
  if (rc != 0 || !fs::exists(tmp_so)) {
    fs::remove(tmp_so, ec);
    throw std::runtime_error("cpp backend: '" + tc.compiler + "' failed on generated code (" +
                             first_error(diagnostics) + "); source kept at " + src.string());
  }
  fs::rename(tmp_so, so);
  return so.string();
}

SharedObject::SharedObject(const std::string& path) : path_(path) {
  handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char* err = dlerror();
    throw std::runtime_error("cpp backend: cannot load " + path + ": " + (err ? err : "?"));
  }
}

SharedObject::~SharedObject() {
  if (handle_) dlclose(handle_);
}

void* SharedObject::symbol(const std::string& name) const {
  void* p = dlsym(handle_, name.c_str());
  if (!p) throw std::runtime_error("cpp backend: symbol " + name + " missing from " + path_);
  return p;
}

}  // namespace aotgrad::backends::cpp
