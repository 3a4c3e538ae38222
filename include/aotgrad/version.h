// aotgrad's version. CMakeLists.txt reads it from here (project(... VERSION ...) must agree, or
// configuring fails), so there is one place to change it.
#pragma once

#define AOTGRAD_VERSION_MAJOR 0
#define AOTGRAD_VERSION_MINOR 1
#define AOTGRAD_VERSION_PATCH 0
#define AOTGRAD_VERSION "0.1.0"
