// GraphSignature as JSON: exact round trips (exported signatures, and names that need escapes),
// and one-line errors naming the byte offset for JSON that is not a signature.
#include <gtest/gtest.h>

#include "aotgrad/export.h"
#include "export/export_net.h"
#include "testing/values.h"

namespace ag = aotgrad;
using ag::testing::contains;
using ag::testing::error_of;

TEST(ExportJson, ExportedSignaturesRoundTrip) {
  auto net = ag::testing::make_export_net();
  for (bool joint : {false, true}) {
    ag::ExportOptions o{.trace_joint = joint, .output_loss_index = 0};
    ag::GraphSignature s =
        ag::aot_export_module(net, std::tuple{ag::testing::export_net_input()}, o).signature;
    std::string json = s.to_json();
    EXPECT_EQ(ag::signature_from_json(json), s) << json;
    EXPECT_EQ(ag::signature_from_json(json).to_json(), json);
    EXPECT_TRUE(contains(json, "\"buffers_to_mutate\": {\"")) << json;
    EXPECT_EQ(contains(json, "\"backward_signature\": null"), !joint) << json;
  }
}

TEST(ExportJson, NamesNeedingEscapesRoundTrip) {
  ag::GraphSignature s;
  s.parameters = {"a\"b", "back\\slash", "tab\tnew\nline", "\x01", "caf\xc3\xa9"};
  s.inputs_to_parameters = {{"p", "a\"b"}, {"p", "dup key kept"}};
  s.backward_signature = ag::BackwardSignature{{{"g", "a\"b"}}, {}, ""};
  std::string json = s.to_json();
  EXPECT_TRUE(contains(json, "\\u0001")) << json;
  EXPECT_EQ(ag::signature_from_json(json), s);
  // Standard escapes another writer may use read back to the same names.
  ag::GraphSignature t = ag::signature_from_json(
      R"({"parameters": ["caf\u00e9", "\ud83d\ude00", "a\/b"], "backward_signature": null})");
  EXPECT_EQ(t.parameters, (std::vector<std::string>{"caf\xc3\xa9", "\xf0\x9f\x98\x80", "a/b"}));
}

TEST(ExportJson, MalformedJsonIsOneLineNamingTheOffset) {
  struct Case {
    std::string json, part;
  };
  std::vector<Case> cases = {
      {"", "signature JSON, byte 0: expected a value, found the end"},
      {"{\"parameters\": [\"a\",]}", "byte 20: expected a value, found ']'"},
      {"{\"parameters\": \"a\"}", "field \"parameters\" must be an array of strings"},
      {"{\"buffers_to_mutate\": {\"a\": 1}}",
       "field \"buffers_to_mutate\" must be an object of strings"},
      {"{\"nope\": []}", "unknown field \"nope\""},
      {"{\"parameters\": [\"\\x\"]}", "byte 18: unknown escape"},
      {"{\"parameters\": [\"\\ud800\"]}", "high surrogate without its low half"},
      {"{} x", "byte 3: unexpected 'x' after the JSON object"},
      {std::string(100, '['), "nesting deeper than 8 levels"},
      {"{\"parameters\": [\"a\x01\"]}", "byte 18: unescaped control character"},
      {"[\"\xff\"]", "byte 2: not valid UTF-8"},
  };
  for (const Case& c : cases) {
    std::string m = error_of<ag::ExportError>([&] { ag::signature_from_json(c.json); });
    EXPECT_TRUE(contains(m, c.part)) << c.json << " -> " << m;
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    EXPECT_LE(m.size(), 300u);
  }
}
