// The aotgrad command-line program (grows in issue 3).
#include <cstdio>

int main() {
  std::puts("aotgrad: graph tools are not built yet");
  return 0;
}
