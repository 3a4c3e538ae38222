// safetensors reader and writer: files built byte by byte to the format's specification load
// with the values and names they spell; what we write is that same byte sequence; every dtype
// and layout round-trips bit for bit; and each kind of malformed file is refused with one line
// naming the file and what is wrong.
//
// No file from the reference (Python) writer is committed: `/usr/bin/python3 -c 'import
// safetensors'` fails on the machine these tests were written on. The test
// LoadsInPythonWhereThePackageExists checks our files with the reference reader wherever it is
// installed, and skips elsewhere.
#include "aotgrad/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"

namespace aotgrad {
namespace {

// An 8-byte little-endian length, the header, then the data: a file exactly as the spec lays
// it out.
std::string file_bytes(const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string f32_bytes(const std::vector<float>& v) {
  std::string out(v.size() * 4, '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    uint32_t bits;
    std::memcpy(&bits, &v[i], 4);
    for (int b = 0; b < 4; ++b) out[4 * i + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
  }
  return out;
}

std::string error_of(const std::string& bytes) {
  try {
    read_safetensors_bytes(bytes, "bad.safetensors");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Safetensors, SpecFileLoadsAndWritesByteForByte) {
  const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(header.size() % 8, 0u);  // no padding needed for this one
  const std::string bytes = file_bytes(header, f32_bytes({0, 1, 2, 3, 4, 5}));

  SafetensorsContents c = read_safetensors_bytes(bytes);
  ASSERT_EQ(c.tensors.size(), 1u);
  EXPECT_EQ(c.tensors[0].first, "attn.0");
  EXPECT_EQ(c.tensors[0].second.sizes(), (IntList{1, 2, 3}));
  EXPECT_EQ(c.tensors[0].second.dtype(), DType::f32);
  EXPECT_EQ(c.tensors[0].second.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(c.metadata.empty());

  EXPECT_EQ(write_safetensors_bytes(c.tensors), bytes);
}

TEST(Safetensors, HeaderIsPaddedWithSpacesToEightBytes) {
  const std::string json = R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(json.size() % 8, 1u);
  const std::string bytes = file_bytes(json + std::string(7, ' '), f32_bytes({0, 1, 2, 3, 4, 5}));
  SafetensorsContents c = read_safetensors_bytes(bytes);
  EXPECT_EQ(c.tensors[0].second.sizes(), (IntList{1, 1, 2, 3}));
  EXPECT_EQ(write_safetensors_bytes(c.tensors), bytes);
}

TEST(Safetensors, EmptyFileAndMetadata) {
  EXPECT_EQ(write_safetensors_bytes({}), file_bytes("{}      "));
  const std::string with_meta = file_bytes(R"({"__metadata__":{"framework":"pt"}})"
                                           "     ");
  EXPECT_EQ(write_safetensors_bytes({}, {{"framework", "pt"}}), with_meta);
  SafetensorsContents c = read_safetensors_bytes(with_meta);
  EXPECT_TRUE(c.tensors.empty());
  ASSERT_EQ(c.metadata.size(), 1u);
  EXPECT_EQ(c.metadata[0], (std::pair<std::string, std::string>{"framework", "pt"}));
}

TEST(Safetensors, WriterOrdersByDtypeWidthThenName) {
  NamedTensorList tensors = {{"b", ones({2}, DType::b8)},
                             {"z", ones({1})},
                             {"a", ones({1})},
                             {"h", ones({1}, DType::f16)},
                             {"i", ones({1}, DType::i64)},
                             {"d", ones({1}, DType::f64)},
                             {"g", ones({1}, DType::bf16)}};
  SafetensorsContents c = read_safetensors_bytes(write_safetensors_bytes(tensors));
  std::vector<std::string> names;
  for (auto& [n, t] : c.tensors) names.push_back(n);
  // The reference's dtype order, widest (last in its enum) first: I64, F64, F32, BF16, F16, BOOL.
  EXPECT_EQ(names, (std::vector<std::string>{"i", "d", "a", "z", "g", "h", "b"}));
}

TEST(Safetensors, EveryDtypeRoundTripsBitForBit) {
  Tensor f32 = from_vector(std::vector<float>{1.5f, -0.0f, NAN, INFINITY, 1e-40f}, {5});
  Tensor f64 = from_vector(std::vector<double>{1.0 / 3, -2.5e300}, {2, 1});
  Tensor i64 = from_vector(std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX}, {2, 2});
  Tensor b8 = from_vector(std::vector<bool>{true, false, true}, {3});
  Tensor f16 = from_vector(std::vector<float>{0.5f, 65504.0f, -3.0f}, {3}).to(DType::f16);
  Tensor bf16 = from_vector(std::vector<float>{0.5f, 1e30f, -3.0f}, {3}).to(DType::bf16);
  Tensor scalar = scalar_tensor(7.0, DType::f32);
  Tensor empty = zeros({0, 3});
  NamedTensorList in = {{"f32", f32}, {"f64", f64},   {"i64", i64},       {"b8", b8},
                        {"f16", f16}, {"bf16", bf16}, {"scalar", scalar}, {"empty", empty}};
  SafetensorsContents c = read_safetensors_bytes(write_safetensors_bytes(in, {{"k", "v"}}));
  ASSERT_EQ(c.tensors.size(), in.size());
  for (const auto& [name, want] : in) {
    const std::string& key = name;  // clang before 16 cannot capture a structured binding
    auto it = std::find_if(c.tensors.begin(), c.tensors.end(),
                           [&](const auto& e) { return e.first == key; });
    ASSERT_NE(it, c.tensors.end()) << name;
    const Tensor& got = it->second;
    EXPECT_EQ(got.dtype(), want.dtype()) << name;
    EXPECT_EQ(got.sizes(), want.sizes()) << name;
    size_t nbytes = static_cast<size_t>(want.numel()) * itemsize(want.dtype());
    if (nbytes == 0) continue;  // an empty tensor has no data pointer to compare
    EXPECT_EQ(std::memcmp(got.impl()->data_bytes(), want.contiguous().impl()->data_bytes(), nbytes),
              0)
        << name;
  }
}

TEST(Safetensors, NonContiguousTensorsAreWrittenInLogicalOrder) {
  Tensor t = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).t();  // [3, 2]
  SafetensorsContents c = read_safetensors_bytes(write_safetensors_bytes({{"t", t}}));
  EXPECT_EQ(c.tensors[0].second.sizes(), (IntList{3, 2}));
  EXPECT_EQ(c.tensors[0].second.to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
}

TEST(Safetensors, ReaderAcceptsWhatTheReferenceAccepts) {
  // Spaces and newlines, any key order, unknown keys inside an entry, escapes in names, entries
  // listed out of offset order, a lowercase \u escape and a surrogate pair.
  const std::string header =
      "{ \"z\\u00e9\\ud83d\\ude00\" : { \"shape\" : [ 2 ] , \"extra\" : {\"x\": [null, true]},\n"
      "  \"data_offsets\" : [ 4 , 12 ], \"dtype\" : \"F32\" },\n"
      "  \"first\\n\": {\"dtype\": \"BOOL\", \"shape\": [4], \"data_offsets\": [0, 4]},\n"
      "  \"__metadata__\": {\"a\\\"b\": \"c\\\\d\"} }\n";
  std::string data = std::string("\x01\x00\x07\x00", 4) + f32_bytes({2.5f, -1.0f});
  SafetensorsContents c = read_safetensors_bytes(file_bytes(header, data));
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].first, "first\n");
  EXPECT_EQ(c.tensors[0].second.to_vector<bool>(), (std::vector<bool>{true, false, true, false}));
  EXPECT_EQ(c.tensors[1].first, "z\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(c.tensors[1].second.to_vector<float>(), (std::vector<float>{2.5f, -1.0f}));
  ASSERT_EQ(c.metadata.size(), 1u);
  EXPECT_EQ(c.metadata[0].first, "a\"b");
  EXPECT_EQ(c.metadata[0].second, "c\\d");
}

TEST(Safetensors, NamesNeedingEscapesRoundTrip) {
  std::string name = "q\"\\\n\t\x01/\xc3\xa9";
  SafetensorsContents c =
      read_safetensors_bytes(write_safetensors_bytes({{name, ones({1})}}, {{"\x7f", "\x1f"}}));
  EXPECT_EQ(c.tensors[0].first, name);
  EXPECT_EQ(c.metadata[0], (std::pair<std::string, std::string>{"\x7f", "\x1f"}));
}

struct Malformed {
  const char* what;
  std::string bytes;
  const char* expect;  // a part of the message
};

TEST(Safetensors, MalformedFilesAreRefusedWithOneLine) {
  const std::string ok_entry = R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight = f32_bytes({1, 2});
  auto one = [&](const std::string& entry, const std::string& data) {
    return file_bytes("{" + entry + "}", data);
  };
  std::string huge_len(8, '\xff');
  std::vector<Malformed> cases = {
      {"empty", "", "too short"},
      {"7 bytes", std::string(7, '\0'), "too short"},
      {"huge header length", huge_len + "{}", "exceeds the format's limit"},
      {"header longer than the file", file_bytes("{}").substr(0, 9), "truncated header"},
      {"not JSON", file_bytes("hello"), "expected a value"},
      {"not an object", file_bytes("[1,2]"), "must be a JSON object"},
      {"unterminated", file_bytes(R"({"t":{"dtype":"F32")"), "expected '}'"},
      {"trailing garbage", file_bytes("{} x"), "after the JSON object"},
      {"invalid UTF-8", file_bytes("{\"\xff\":1}"), "not valid UTF-8"},
      {"overlong UTF-8", file_bytes("{\"\xc0\xaf\":1}"), "not valid UTF-8"},
      {"control character", file_bytes("{\"a\x01\":1}"), "unescaped control character"},
      {"bad escape", file_bytes(R"({"a\q":1})"), "unknown escape"},
      {"lone surrogate", file_bytes(R"({"\udc00":1})"), "lone low surrogate"},
      {"half a pair", file_bytes(R"({"\ud800x":1})"), "without its low half"},
      {"leading zero", file_bytes(R"({"t":01})"), "expected '}', found '1'"},
      {"deep nesting", file_bytes("{\"t\":" + std::string(100, '[') + std::string(100, ']') + "}"),
       "nesting deeper than 32"},
      {"entry not an object", one(R"("t":5)", ""), "must be an object, found a number"},
      {"no dtype", one(R"("t":{"shape":[2],"data_offsets":[0,8]})", eight), "has no \"dtype\""},
      {"dtype twice",
       one(R"("t":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]})", eight),
       "lists \"dtype\" twice"},
      {"unknown dtype", one(R"("t":{"dtype":"F99","shape":[2],"data_offsets":[0,8]})", eight),
       "unknown dtype \"F99\""},
      {"unsupported dtype", one(R"("t":{"dtype":"U32","shape":[2],"data_offsets":[0,8]})", eight),
       "dtype U32, which aotgrad has no type for"},
      {"negative size", one(R"("t":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", eight),
       "shape[0] must be a non-negative integer, found -2"},
      {"fractional size", one(R"("t":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})", eight),
       "found 2.0"},
      {"size beyond int64",
       one(R"("t":{"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]})", eight),
       "does not fit int64"},
      {"size beyond 64 bits",
       one(R"("t":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,8]})", eight),
       "does not fit 64 bits"},
      {"byte size overflows",
       one(R"("t":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]})", eight),
       "byte size beyond 64 bits"},
      {"shape is a string", one(R"("t":{"dtype":"F32","shape":"2","data_offsets":[0,8]})", eight),
       "\"shape\" must be an array"},
      {"three offsets", one(R"("t":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]})", eight),
       "must be [begin, end], found 3"},
      {"end before begin", one(R"("t":{"dtype":"F32","shape":[2],"data_offsets":[8,0]})", eight),
       "end before they begin"},
      {"gap at start", one(R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})", eight),
       "data begins at byte 4 of the data, expected 0"},
      {"size mismatch", one(R"("t":{"dtype":"F32","shape":[3],"data_offsets":[0,8]})", eight),
       "needs 12 bytes, data_offsets give 8"},
      {"data missing", one(ok_entry, "1234"), "the file has 4 after the header"},
      {"bytes after the data", one(ok_entry, eight + "x"), "cover 8 bytes of data, the file has 9"},
      {"overlap", one(ok_entry + R"(,"u":{"dtype":"F32","shape":[1],"data_offsets":[4,8]})", eight),
       "expected 8"},
      {"duplicate name", one(ok_entry + "," + ok_entry, eight + eight), "'t' is listed twice"},
      {"metadata not an object", file_bytes(R"({"__metadata__":[]})"),
       "\"__metadata__\" must be an object"},
      {"metadata value a number", file_bytes(R"({"__metadata__":{"k":1}})"),
       "entry 'k' must be a string"},
      {"metadata twice", file_bytes(R"({"__metadata__":{},"__metadata__":{}})"),
       "\"__metadata__\" twice"},
      {"hostile name echoed escaped", one(R"("\u001b[31m":{"dtype":"X"})", ""),
       "tensor '\\x1b[31m'"},
  };
  for (const Malformed& m : cases) {
    std::string msg = error_of(m.bytes);
    EXPECT_NE(msg.find("safetensors file 'bad.safetensors': "), std::string::npos)
        << m.what << ": " << msg;
    EXPECT_NE(msg.find(m.expect), std::string::npos) << m.what << ": " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << m.what << ": " << msg;
    EXPECT_EQ(msg.find('\x1b'), std::string::npos) << m.what << ": " << msg;
    EXPECT_LE(msg.size(), 300u) << m.what << ": " << msg;
  }
}

TEST(Safetensors, WriterRefusesWhatItCannotWrite) {
  auto error = [](const NamedTensorList& t, const StringPairs& meta = {}) -> std::string {
    try {
      write_safetensors_bytes(t, meta, "out.safetensors");
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(error({{"a", ones({1})}, {"a", ones({2})}}).find("'a' is given twice"),
            std::string::npos);
  EXPECT_NE(error({{"__metadata__", ones({1})}}).find("may not be named"), std::string::npos);
  EXPECT_NE(error({{"u", Tensor()}}).find("'u' is undefined"), std::string::npos);
  EXPECT_NE(error({{"\xff", ones({1})}}).find("not valid UTF-8"), std::string::npos);
  EXPECT_NE(error({}, {{"k", "\xc3"}}).find("metadata value"), std::string::npos);
  EXPECT_NE(error({{"a", ones({1})}}, {}).find("(no error)"), std::string::npos);
}

class SafetensorsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("aotgrad_safetensors_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::filesystem::path dir_;
};

TEST_F(SafetensorsFiles, RoundTripThroughAFile) {
  Tensor w = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor n = from_vector(std::vector<int64_t>{7}, {1});
  write_safetensors(path("m.safetensors"), {{"w", w}, {"n", n}}, {{"step", "12"}});
  EXPECT_FALSE(std::filesystem::exists(path("m.safetensors.tmp")));
  SafetensorsContents c = read_safetensors(path("m.safetensors"));
  ASSERT_EQ(c.tensors.size(), 2u);
  EXPECT_EQ(c.tensors[0].first, "n");  // I64 before F32
  EXPECT_EQ(c.tensors[0].second.to_vector<int64_t>(), (std::vector<int64_t>{7}));
  EXPECT_EQ(c.tensors[1].second.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(c.metadata, (StringPairs{{"step", "12"}}));
}

TEST_F(SafetensorsFiles, MissingDirectoryAndTruncatedFilesNameThePath) {
  auto error = [](const std::string& p) -> std::string {
    try {
      read_safetensors(p);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no error)";
  };
  std::string missing = error(path("none.safetensors"));
  EXPECT_NE(missing.find("none.safetensors': cannot open the file: No such file"),
            std::string::npos)
      << missing;
  EXPECT_NE(error(dir_.string()).find("not a regular file"), std::string::npos);
  std::string full = write_safetensors_bytes({{"w", ones({64})}});
  std::ofstream(path("cut.safetensors"), std::ios::binary) << full.substr(0, full.size() - 1);
  EXPECT_NE(error(path("cut.safetensors")).find("cover 256 bytes of data, the file has 255"),
            std::string::npos);
}

TEST_F(SafetensorsFiles, WritingIntoAMissingDirectoryFailsCleanly) {
  try {
    write_safetensors(path("no/such/dir/m.safetensors"), {{"w", ones({1})}});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace aotgrad
