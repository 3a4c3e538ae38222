// The registry of compilers by name (aotgrad/compiler.h: register_compiler). Built-in compilers
// are registered through the same call as a user's, once, on first use; to add one, add a line to
// register_builtins. Thread-safety: one mutex guards the map; lookups copy the function out, so a
// compile never runs under the lock.
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>

#include "backends/backend.h"
#include "backends/cpp/build.h"
#include "backends/cpp/cpp_backend.h"
#include "backends/interpreter.h"
#include "tensor/message_text.h"

namespace aotgrad {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, CompilerFn> compilers;
};

void register_builtins(Registry& r) {
  r.compilers["interpreter"] = [](const GraphView& g) {
    return backends::compile_interpreter(g.graph());
  };
  r.compilers["cpp"] = [](const GraphView& g) { return backends::compile_cpp(g.graph()); };
}

Registry& registry() {
  static Registry r;
  static const bool ready = (register_builtins(r), true);  // once, thread-safe (magic statics)
  (void)ready;
  return r;
}

}  // namespace

namespace backends {
std::string choose_default_compiler(const char* env, bool cpp_compiler_runs) {
  if (env && *env) return env;
  return cpp_compiler_runs ? "cpp" : "interpreter";
}
}  // namespace backends

const std::string& default_compiler() {
  static const std::string name = [] {
    const char* env = std::getenv("AOTGRAD_COMPILER");
    // The C++ compiler is only probed when the environment did not choose.
    return backends::choose_default_compiler(env, !(env && *env) && backends::cpp::compiler_runs());
  }();
  return name;
}

void register_compiler(const std::string& name, CompilerFn compiler) {
  if (name.empty()) throw std::invalid_argument("register_compiler: the name is empty");
  if (!compiler)
    throw std::invalid_argument("register_compiler: no compiler function given for '" +
                                escape_for_message(name, 64) + "'");
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.compilers[name] = std::move(compiler);
}

std::vector<std::string> compiler_names() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> names;
  for (const auto& [name, fn] : r.compilers) names.push_back(name);
  return names;
}

CompilerFn registered_compiler(const std::string& name) {
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.compilers.find(name);
    if (it != r.compilers.end()) return it->second;
  }
  std::string known;
  for (const std::string& n : compiler_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown compiler '" + escape_for_message(name) +
                              "' (known: " + known + ")");
}

CompiledGraphFn compile_with(const std::string& name, const GraphView& graph) {
  return registered_compiler(name)(graph);
}

namespace backends {

Compiler over_ir(CompilerFn compiler) {
  return [compiler = std::move(compiler)](const graph::Graph& g) {
    return compiler(GraphView(std::make_shared<const graph::Graph>(g)));
  };
}

Compiler compiler(const std::string& name) {
  return over_ir(registered_compiler(name));
}

std::vector<std::string> compiler_names() {
  return aotgrad::compiler_names();
}

}  // namespace backends
}  // namespace aotgrad
