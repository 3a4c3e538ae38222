# Prints the environment a test preset of CMakePresets.json sets, one NAME=VALUE a line, so that a
# script running that build's tests some other way (scripts/test-shards) sets the same:
#
#   cmake -DPRESET=asan -P scripts/lib/preset-env.cmake
#
# Fails, naming the preset, when CMakePresets.json has no such test preset.
if(NOT DEFINED PRESET)
  message(FATAL_ERROR "preset-env: say which test preset, -DPRESET=NAME")
endif()
file(READ "${CMAKE_CURRENT_LIST_DIR}/../../CMakePresets.json" presets)
string(JSON count LENGTH "${presets}" testPresets)
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${presets}" testPresets ${i} name)
  if(NOT name STREQUAL PRESET)
    continue()
  endif()
  string(JSON env ERROR_VARIABLE none GET "${presets}" testPresets ${i} environment)
  if(none)
    return()
  endif()
  string(JSON vars LENGTH "${env}")
  if(vars EQUAL 0)
    return()
  endif()
  math(EXPR vars_last "${vars} - 1")
  foreach(j RANGE ${vars_last})
    string(JSON var MEMBER "${env}" ${j})
    string(JSON value GET "${env}" ${var})
    execute_process(COMMAND ${CMAKE_COMMAND} -E echo "${var}=${value}")
  endforeach()
  return()
endforeach()
message(FATAL_ERROR "preset-env: CMakePresets.json has no test preset '${PRESET}'")
