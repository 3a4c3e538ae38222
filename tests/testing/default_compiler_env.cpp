// The test binary runs on the interpreter unless told otherwise: AotConfig{} names
// default_compiler(), which is "cpp" wherever a C++ compiler runs, and a C++ compiler run per
// graph of ~1,700 tests would multiply the suite's time. Before main (and before anything asks for
// the default), AOTGRAD_COMPILER is set to "interpreter" unless the environment already sets it:
// `AOTGRAD_COMPILER=cpp ./build/aotgrad_tests` runs the whole suite on the code generator.
#include <stdlib.h>

namespace {

const bool kDefaultCompilerSet = [] {
  setenv("AOTGRAD_COMPILER", "interpreter", /*overwrite=*/0);
  return true;
}();

}  // namespace
