// load_op_library (aotgrad/custom_op.h): dlopen a library whose initializers, or whose exported
// aotgrad_register_ops(), call register_op.
#include <dlfcn.h>

#include <stdexcept>
#include <string>

#include "aotgrad/custom_op.h"

namespace aotgrad {

void load_op_library(const std::string& path) {
  // RTLD_GLOBAL: a second library may use the ops (and symbols) of the first. The handle is never
  // closed: the table keeps pointers into the library for the life of the process.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    const char* why = dlerror();
    throw std::invalid_argument("--load-ops " + path + ": cannot load the library (" +
                                std::string(why ? why : "unknown reason").substr(0, 200) + ")");
  }
  using RegisterFn = void (*)();
  if (auto fn = reinterpret_cast<RegisterFn>(dlsym(handle, "aotgrad_register_ops"))) fn();
}

}  // namespace aotgrad
