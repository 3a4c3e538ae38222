// libFuzzer target: any byte string through the graph text parser, the verifier and
// GraphProgram::parse. Properties checked, besides "no crash, no leak, no UB, no hang":
//   - every rejection is a std::invalid_argument whose message is one printable line of bounded
//     length, and parse_graph's starts with "line L, column C: ";
//   - a text that parses prints to a text that parses again and prints identically.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "aotgrad/graph_program.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"

namespace {

namespace ag = aotgrad;

[[noreturn]] void broken(const char* property, const std::string& detail) {
  std::fprintf(stderr, "graph_parser_fuzz: %s\n%s\n", property, detail.c_str());
  std::abort();
}

// One line of printable ASCII, at most ~300 characters plus the source name and location.
void check_message(const std::string& m) {
  if (m.empty() || m.size() > 400) broken("message length out of bounds", m);
  for (char c : m)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
      broken("message holds a non-printable byte", m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  ag::graph::Graph g{"g"};
  try {
    g = ag::graph::parse_graph(text);
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    check_message(m);
    if (m.rfind("line ", 0) != 0) broken("parse error without a location", m);
    return 0;
  }
  std::string printed = ag::graph::print_graph(g);
  std::string reprinted;
  try {
    reprinted = ag::graph::print_graph(ag::graph::parse_graph(printed));
  } catch (const std::invalid_argument& e) {
    broken("a printed graph does not parse", std::string(e.what()) + "\n" + printed);
  }
  if (reprinted != printed)
    broken("print(parse(print(g))) != print(g)", printed + "\n" + reprinted);
  try {
    ag::graph::verify_graph(g);
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
  }
  try {
    ag::GraphProgram::parse(text, "fuzz.graph");
  } catch (const std::invalid_argument& e) {
    check_message(e.what());
  }
  return 0;
}
