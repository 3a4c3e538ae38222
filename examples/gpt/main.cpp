// aotgrad-gpt: train a character-level GPT with a compiled training step, watch it learn, sample
// from it. See docs/demo.md, or run with --help.
//
//   ./build/aotgrad-gpt                      # the license texts every Debian system has
//   ./build/aotgrad-gpt --data book.txt --steps 2000 --layers 4
//   ./build/aotgrad-gpt --resume aotgrad-gpt-out/checkpoint.safetensors --steps 1200
//
// Exit status: 0 done, 1 a file could not be read or written, 2 a bad flag.
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "corpus.h"
#include "options.h"
#include "train.h"

int main(int argc, char** argv) {
  gpt::ParseResult parsed = gpt::parse_options(std::vector<std::string>(argv + 1, argv + argc));
  if (!parsed.error.empty()) {
    std::fprintf(stderr, "%s\n", parsed.error.c_str());
    return 2;
  }
  if (parsed.options.help) {
    std::cout << gpt::usage_text();
    return 0;
  }
  try {
    gpt::run_gpt(parsed.options, std::cout, isatty(STDOUT_FILENO) != 0);
  } catch (const gpt::FileError& e) {
    std::cout.flush();
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::fprintf(stderr, "aotgrad-gpt: %s\n", e.what());
    return 1;
  }
  return 0;
}
