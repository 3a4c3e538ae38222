// Build and load of generated C++: source text in, a loaded shared object out.
//
// Needs: a system C++ compiler (`c++`, or $AOTGRAD_CXX), found once per process. Guarantees: the
// object is built at most once per content hash into the per-user build directory
// ($AOTGRAD_CACHE_DIR, else $XDG_CACHE_HOME/aotgrad, else ~/.cache/aotgrad; subdirectory cpp/),
// named after a hash of (source, compiler version, flags, CPU features, aotgrad version); an
// existing object of that name is reused; every file is written to a temporary name and renamed,
// so two processes never see half a file. Compile errors throw one line naming the kept source.
// Thread-safe. (The checksummed, size-limited disk cache of src/cache/ is to replace the
// directory handling here; the interface stays.)
#pragma once

#include <memory>
#include <string>

namespace aotgrad::backends::cpp {

// Compiles `source` (unless already built) and returns the path of the shared object.
std::string build_shared_object(const std::string& source);

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

// The compiler flags used for generated code (part of the object's hash).
const std::string& compile_flags();

}  // namespace aotgrad::backends::cpp
