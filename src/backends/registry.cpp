#include <stdexcept>

#include "backends/backend.h"
#include "backends/cpp/cpp_backend.h"
#include "backends/interpreter.h"
#include "tensor/message_text.h"

namespace aotgrad::backends {

Compiler compiler(const std::string& name) {
  if (name == "interpreter") return compile_interpreter;
  if (name == "cpp") return compile_cpp;
  std::string known;
  for (const std::string& n : compiler_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown compiler '" + escape_for_message(name) +
                              "' (known: " + known + ")");
}

std::vector<std::string> compiler_names() {
  return {"interpreter", "cpp"};
}

}  // namespace aotgrad::backends
