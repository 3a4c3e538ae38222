// The shared JSON reader and string writer (tensor/json.h): what it accepts, how deep, and the
// problem and byte offset it reports for what it refuses.
#include "tensor/json.h"

#include <gtest/gtest.h>

namespace json = aotgrad::json;

namespace {

// "problem @offset" of parsing `text`, or "ok".
std::string outcome(std::string_view text, int depth = 4) {
  try {
    json::parse(text, depth);
    return "ok";
  } catch (const json::ParseError& e) {
    return std::string(e.what()) + " @" + std::to_string(e.offset());
  }
}

}  // namespace

TEST(Json, ParsesEveryKindKeepingNumbersAsText) {
  json::Value v = json::parse(R"( {"a": [1, -2.5e+3, true, null], "a": "x\u00e9", "b": {}} )", 4);
  ASSERT_EQ(v.kind, json::Value::Kind::object);
  EXPECT_EQ(v.keys, (std::vector<std::string>{"a", "a", "b"}));  // repeated keys kept, in order
  const json::Value& list = v.values[0];
  ASSERT_EQ(list.items.size(), 4u);
  EXPECT_EQ(list.items[1].text, "-2.5e+3");
  EXPECT_EQ(list.items[2].kind, json::Value::Kind::boolean);
  EXPECT_EQ(list.items[3].kind, json::Value::Kind::null);
  EXPECT_EQ(v.values[1].text, "x\xc3\xa9");
  EXPECT_EQ(std::string(json::kind_name(v.values[2].kind)), "an object");
}

TEST(Json, StringsWrittenReadBackExactly) {
  std::string all;
  for (int c = 1; c < 0x80; ++c) all += static_cast<char>(c);
  all += "caf\xc3\xa9 \xf0\x9f\x98\x80";
  std::string text;
  json::append_string(text, all);
  EXPECT_NE(text.find("\\n"), std::string::npos);
  EXPECT_NE(text.find("\\u001f"), std::string::npos);
  EXPECT_EQ(json::parse(text, 0).text, all);
}

TEST(Json, DepthLimitIsExact) {
  EXPECT_EQ(outcome("[[[[1]]]]", 4), "ok");
  EXPECT_EQ(outcome("[[[[[1]]]]]", 4), "nesting deeper than 4 levels @5");
}

TEST(Json, RefusalsNameTheProblemAndOffset) {
  EXPECT_EQ(outcome(""), "expected a value, found the end @0");
  EXPECT_EQ(outcome("[1,]"), "expected a value, found ']' @3");
  EXPECT_EQ(outcome("{\"a\" 1}"), "expected ':', found '1' @5");
  EXPECT_EQ(outcome("01"), "unexpected '1' after the JSON value @1");
  EXPECT_EQ(outcome("[1.]"), "malformed number @3");
  EXPECT_EQ(outcome("\"a\x01\""), "unescaped control character in a string @2");
  EXPECT_EQ(outcome("\"\\q\""), "unknown escape '\\q' @2");
  EXPECT_EQ(outcome("\"\\udc00\""), "lone low surrogate in a \\u escape @7");
  EXPECT_EQ(outcome("\"\\ud800\\u0041\""), "high surrogate without its low half @13");
  EXPECT_EQ(outcome("\"\\u12x4\""), "malformed \\u escape @5");
  EXPECT_EQ(outcome("\"\\u12\""), "truncated \\u escape @3");
  EXPECT_EQ(outcome("\"abc"), "unterminated string @4");
  EXPECT_EQ(outcome("[\"\xc0\xaf\"]"), "not valid UTF-8 @2");
  EXPECT_EQ(json::invalid_utf8_at("ok\xed\xa0\x80"), 2u);  // an encoded surrogate
}
