#include "aot/log.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "graph/printer.h"

namespace aotgrad::aot {
namespace {

std::string_view topic_name(LogTopic t) {
  switch (t) {
    case LogTopic::recompiles:
      return "recompiles";
    case LogTopic::cache:
      return "cache";
    case LogTopic::guards:
      return "guards";
    case LogTopic::graphs:
      return "graphs";
    case LogTopic::partition:
      return "partition";
  }
  return "";
}

// A name from the environment for a message: printable ASCII only, at most 200 characters.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200)) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return s.size() > 200 ? out + "..." : out;
}

}  // namespace

bool log_enabled(LogTopic topic) {
  const char* v = std::getenv("AOTGRAD_LOG");
  if (!v) return false;
  std::string_view list(v), want = topic_name(topic);
  while (!list.empty()) {
    size_t end = list.find_first_of(", ");
    std::string_view word = list.substr(0, end);
    if (word == want || word == "all") return true;
    if (end == std::string_view::npos) break;
    list.remove_prefix(end + 1);
  }
  return false;
}

void log_line(std::string_view line) {
  std::string out = "[aotgrad] ";
  out += line;
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stderr);
}

std::string key_digest(std::string_view key) {
  uint64_t h = 1469598103934665603ull;
  for (char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void dump_text(const std::string& fn_name, size_t index, std::string_view stage,
               const std::string& text) {
  const char* dir = std::getenv("AOTGRAD_DUMP");
  if (!dir || !*dir) return;
  std::filesystem::path path(dir);
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) {
    log_line("AOTGRAD_DUMP: cannot create directory '" + shown(dir) + "' (" + ec.message() +
             "); graphs are not dumped");
    return;
  }
  std::string file = fn_name;  // a function name may hold '/' or worse: keep it one file name
  for (char& c : file)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) c = '_';
  path /= file + "_" + std::to_string(index) + "_" + std::string(stage) + ".txt";
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out)
    log_line("AOTGRAD_DUMP: cannot write '" + shown(path.string()) + "'; graphs are not dumped");
}

std::function<void(std::string_view, const graph::Graph&)> dump_and_log_graphs(
    const std::string& fn_name, size_t index) {
  const char* dump = std::getenv("AOTGRAD_DUMP");
  bool log_graphs = log_enabled(LogTopic::graphs);
  if (!log_graphs && !(dump && *dump)) return {};
  return [fn_name, index, log_graphs](std::string_view stage, const graph::Graph& g) {
    std::string text = graph::print_graph(g);
    dump_text(fn_name, index, stage, text);
    if (log_graphs)
      log_line("graphs fn=" + fn_name + " index=" + std::to_string(index) + " graph=" +
               std::string(stage) + " nodes=" + std::to_string(g.nodes().size()) + "\n" + text);
  };
}

namespace {
thread_local const CompilingScope* t_compiling = nullptr;
}  // namespace

CompilingScope::CompilingScope(std::string fn_name, size_t index)
    : fn_name_(std::move(fn_name)), index_(index), outer_(t_compiling) {
  t_compiling = this;
}
CompilingScope::~CompilingScope() {
  t_compiling = outer_;
}
const CompilingScope* CompilingScope::current() {
  return t_compiling;
}

}  // namespace aotgrad::aot
