#include "aot/tracing_state.h"

#include "aotgrad/aot.h"

namespace aotgrad::aot {
namespace {
thread_local int t_tracing = 0;     // traces of compiled functions running on this thread
thread_local int t_eager_only = 0;  // live EagerOnlyScopes on this thread
}  // namespace

bool tracing_on_this_thread() {
  return t_tracing > 0;
}
bool eager_only_on_this_thread() {
  return t_eager_only > 0;
}
TracingScope::TracingScope() {
  ++t_tracing;
}
TracingScope::~TracingScope() {
  --t_tracing;
}

}  // namespace aotgrad::aot

namespace aotgrad::aot_detail {
EagerOnlyScope::EagerOnlyScope() {
  ++aot::t_eager_only;
}
EagerOnlyScope::~EagerOnlyScope() {
  --aot::t_eager_only;
}
}  // namespace aotgrad::aot_detail
