// GradModeScope: grad mode set to a value known only at run time, for the scope's lifetime (an
// EnableGradGuard or a NoGradGuard, whichever `enabled` asks for). Used by the engine
// (create_graph) and the tracer (replaying a recorded grad mode).
#pragma once

#include <optional>

#include "aotgrad/autograd.h"

namespace aotgrad {

class GradModeScope {
 public:
  explicit GradModeScope(bool enabled) {
    if (enabled)
      enable_.emplace();
    else
      disable_.emplace();
  }

 private:
  std::optional<EnableGradGuard> enable_;
  std::optional<NoGradGuard> disable_;
};

}  // namespace aotgrad
