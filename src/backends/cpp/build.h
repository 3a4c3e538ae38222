// Build and load of generated C++: source text in, a loaded shared object out.
//
// Needs: a system C++ compiler (`c++`, or $AOTGRAD_CXX), found once per process. Guarantees: the
// object is stored in the on-disk cache (cache/disk_cache.h, namespace "cpp": checksummed,
// atomic writes, least-recently-used eviction, `aotgrad cache stats|clear`) under a key of
// (source, compiler version, flags, CPU model and features, aotgrad version), and loaded from a
// private copy of the checked bytes (named after them: dlopen reuses a loaded library of the
// same path), so a corrupt or truncated entry is rebuilt and never run, and another process
// replacing the entry meanwhile cannot change what is loaded. Within a process
// one source is compiled and loaded once while any program holds it. The compiler writes into a
// private temporary directory; with the cache off (AOTGRAD_CACHE=0, no directory) every process
// compiles. Compile errors throw one line naming the kept source. Thread-safe.
#pragma once

#include <future>
#include <memory>
#include <string>

namespace aotgrad::backends::cpp {

// A dlopen'ed shared object, closed when the last owner lets go.
class SharedObject {
 public:
  // Throws std::runtime_error naming `path` and dlerror() when it cannot be loaded.
  explicit SharedObject(const std::string& path);
  ~SharedObject();
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  // The address of `name`; throws std::runtime_error naming it and the path when absent.
  void* symbol(const std::string& name) const;

 private:
  std::string path_;
  void* handle_ = nullptr;
};

// The shared object built from `source`: from this process's loaded ones, the disk cache, or the
// compiler (then stored in the cache).
std::shared_ptr<const SharedObject> load_shared_object(const std::string& source);

// The same, built on a thread of its own: the caller goes on (a training step's backward graph
// compiles while its forward graph compiles and runs). The toolchain and the cache directory are
// read from the environment before this returns, and a compiler that cannot be run throws here;
// the C++ compiler's failure on the source is the future's exception, as is a compiler still
// running after $AOTGRAD_CXX_TIMEOUT seconds (default 600; it is then killed; a value that is
// not a whole number of seconds throws here). The compiler runs without a shell and leaves this
// process's signal dispositions alone. A source already loaded
// in this process gives a ready future. Destroying the last copy of the future waits for the
// build (std::async).
using ObjectFuture = std::shared_future<std::shared_ptr<const SharedObject>>;
ObjectFuture start_shared_object(const std::string& source);

// Whether the C++ compiler ($AOTGRAD_CXX, else c++) can be run (asked once per command).
bool compiler_runs();

// The first line of `compiler --version` (part of the cache key). Asking costs a process start
// (~10 ms, half the budget of a warm start), so the answer is kept in the disk cache (namespace
// "toolchain") under the identity of the file the command resolves to ($PATH, then symbolic
// links: its path, device, inode, size and modification time), as ccache's compiler_check=mtime
// does: a compiler replaced in place (a package upgrade) or a retargeted link is asked again. A
// wrapper script is identified by its own file, so one that calls another compiler keeps the
// version it reported while the script stays unchanged (`aotgrad cache clear` forgets it).
// Throws std::runtime_error naming the command when it cannot be run. Thread-safe.
std::string compiler_version(const std::string& compiler);

// The compiler flags used for generated code (part of the cache key).
const std::string& compile_flags();

}  // namespace aotgrad::backends::cpp
