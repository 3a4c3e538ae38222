// `aotgrad export` (docs/cli.md): a graph file exported as aot_export_module exports a module —
// the forward (or joint) graph files and the signature as JSON.
//
// Split from main() like cli_args.h: parse_export_args never exits, prints or reads a file, so
// tests call it directly; export_main runs the command and returns the exit status.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace aotgrad::cli {

extern const char* const kExportUsage;

struct ExportArgs {
  bool help = false;
  std::string graph;                  // GRAPH, a path
  std::string out;                    // --out DIR
  bool joint = false;                 // --joint (else --inference, the default)
  std::optional<size_t> loss_output;  // --loss-output K
};

// Reads the arguments after `export`. Throws UsageError (cli_args.h), one line naming the flag.
ExportArgs parse_export_args(const std::vector<std::string>& args);

// Runs `aotgrad export` with the arguments after `export`: 0 ok, 1 a bad graph or a graph export
// refuses (one line on stderr), 2 bad usage.
int export_main(const std::vector<std::string>& args);

}  // namespace aotgrad::cli
