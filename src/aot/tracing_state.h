// Per-thread state of compiled functions: whether this thread is tracing one (compiled calls
// made meanwhile are traced through, their ops joining the outer graph), and whether it is
// inside an aot_module's eager fallback (aot_detail::EagerOnlyScope: compiled calls neither
// compile nor wait for a compile). Thread-locals: nothing here is shared between threads.
#pragma once

namespace aotgrad::aot {

bool tracing_on_this_thread();
bool eager_only_on_this_thread();

class TracingScope {
 public:
  TracingScope();
  ~TracingScope();
  TracingScope(const TracingScope&) = delete;
  TracingScope& operator=(const TracingScope&) = delete;
};

}  // namespace aotgrad::aot
