// The op this thread is running, so errors raised far below it can name it.
//
// An allocation that fails or a shape whose byte size overflows is noticed in make_tensor or the
// allocator, which know bytes and sizes but not which op asked. ops::dispatch and the graph
// interpreter open a CurrentOpScope around each op; nested ops (a composite calling others, a VJP)
// shadow the outer one for their duration, so the innermost op is named.
// Thread-safety: the state is thread-local; a scope must end on the thread that opened it.
#pragma once

#include <string>
#include <string_view>

namespace aotgrad {

class CurrentOpScope {
 public:
  // `op` must outlive the scope (op-table names are static).
  explicit CurrentOpScope(std::string_view op) noexcept;
  ~CurrentOpScope();
  CurrentOpScope(const CurrentOpScope&) = delete;
  CurrentOpScope& operator=(const CurrentOpScope&) = delete;

 private:
  std::string_view previous_;
};

// The innermost op running on this thread ("aten.mm.default"), or "" outside every op.
std::string_view current_op() noexcept;

// current_op(), or `fallback` outside every op: the subject of an error message.
std::string op_label(std::string_view fallback);

}  // namespace aotgrad
