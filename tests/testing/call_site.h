// CallSite: the file and line of a test helper's caller, for gtest's ScopedTrace.
//
// std::source_location would do, but clang 14 (the asan/fuzz preset's compiler) cannot compile
// libstdc++'s <source_location>; __builtin_FILE/__builtin_LINE as default arguments are evaluated
// at the call site by both gcc and clang.
#pragma once

namespace aotgrad::testing {

struct CallSite {
  const char* file;
  int line;

  static constexpr CallSite current(const char* file = __builtin_FILE(),
                                    int line = __builtin_LINE()) {
    return {file, line};
  }
  const char* file_name() const { return file; }
  int line_number() const { return line; }
};

}  // namespace aotgrad::testing
