// AOTGRAD_LOG and AOTGRAD_DUMP: the structured events of compiled functions and the graph dumps.
//
// AOTGRAD_LOG is a list of topics separated by commas or spaces (recompiles, cache, guards,
// graphs, partition, or all); every event is one line on stderr, "[aotgrad] TOPIC key=value ...",
// written with one call so that lines from several threads do not interleave. AOTGRAD_DUMP=dir
// writes graphs to dir/NAME_INDEX_STAGE.txt, creating dir; when it cannot, one error line says
// why. Both are read from the environment when asked (at a compile, never per call).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "graph/graph.h"

namespace aotgrad::aot {

enum class LogTopic : uint8_t { recompiles, cache, guards, graphs, partition };

bool log_enabled(LogTopic topic);
// Writes "[aotgrad] " + line + "\n" to stderr.
void log_line(std::string_view line);
// A short stable digest of a guard key (FNV-1a 64, 16 hex digits), for log lines.
std::string key_digest(std::string_view key);

// Writes `text` to $AOTGRAD_DUMP/FN_INDEX_STAGE.txt when AOTGRAD_DUMP is set (creating the
// directory); prints one error line when the directory or the file cannot be written.
void dump_text(const std::string& fn_name, size_t index, std::string_view stage,
               const std::string& text);

// The function whose graphs this thread is compiling (set around instantiate), so that what a
// compiler dumps (the cpp backend's code) is named after the function: FN_INDEX_STAGE.txt.
class CompilingScope {
 public:
  CompilingScope(std::string fn_name, size_t index);
  ~CompilingScope();
  CompilingScope(const CompilingScope&) = delete;
  CompilingScope& operator=(const CompilingScope&) = delete;
  // The innermost scope on this thread, or null.
  static const CompilingScope* current();
  const std::string& fn_name() const { return fn_name_; }
  size_t index() const { return index_; }

 private:
  std::string fn_name_;
  size_t index_;
  const CompilingScope* outer_;
};

// The graph hook lower() takes (aot/lower.h) that dumps each graph of compile `index` of `fn_name`
// and, with AOTGRAD_LOG=graphs, logs it: a line "graphs fn=NAME index=I graph=STAGE nodes=N"
// followed by the graph's text. Reads the environment once, when made.
std::function<void(std::string_view, const graph::Graph&)> dump_and_log_graphs(
    const std::string& fn_name, size_t index);

}  // namespace aotgrad::aot
