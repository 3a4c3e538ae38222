// libFuzzer target: the `aotgrad` argument parser (tools/cli_args.h) on any argument list. The
// input's bytes are split at '\0' into arguments. Properties checked, besides "no crash, no leak,
// no UB, no hang": parse_cli_args returns or throws UsageError (nothing else), whose message is one
// printable line of at most ~300 characters; an accepted command line is self-consistent.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "cli_args.h"

namespace {

namespace cli = aotgrad::cli;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "cli_args_fuzz: %s\n%s\n", property, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> args;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    size_t end = rest.find('\0');
    args.emplace_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end + 1);
  }
  cli::CliArgs a;
  try {
    a = cli::parse_cli_args(args);
  } catch (const cli::UsageError& e) {
    std::string m = e.what();
    if (m.empty() || m.size() > 300) broken("usage message length out of bounds", m);
    for (char c : m)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        broken("usage message holds a non-printable byte", m);
    return 0;
  }
  using Command = cli::CliArgs::Command;
  if (a.command == Command::help) return 0;
  if (a.graph.empty()) broken("accepted without GRAPH", "");
  if (a.command == Command::run && a.out.empty()) broken("run accepted without --out", "");
  double b = a.options.activation_memory_budget;
  if (!(b >= 0 && b <= 1)) broken("memory budget outside [0, 1]", std::to_string(b));
  for (size_t p : a.options.no_grad)
    if (p > cli::kMaxInputPosition) broken("no_grad position out of range", std::to_string(p));
  if (!a.options.backward && (!a.tangents.empty() || !a.options.no_grad.empty()))
    broken("backward-only flags accepted without --backward", "");
  return 0;
}
