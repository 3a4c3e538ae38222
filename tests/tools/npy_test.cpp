// .npy reading and writing: files written by NumPy 1.24 (tests/data/npy/), round trips of every
// dtype, and the errors for malformed files.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;
namespace fs = std::filesystem;

namespace {

std::string data(const std::string& name) {
  return std::string(AOTGRAD_TEST_DATA) + "/npy/" + name;
}

// A fresh directory per test, removed at the end.
class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("aotgrad_npy_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }
  fs::path dir_;
};

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A version 1.0 file with `dict` as its header, padded as NumPy pads it, followed by `payload`.
std::string npy_bytes(std::string dict, const std::string& payload) {
  size_t total = 10 + dict.size() + 1;
  dict.append((total + 63) / 64 * 64 - total, ' ');
  dict += '\n';
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(dict.size() & 0xff);
  out += static_cast<char>(dict.size() >> 8);
  return out + dict + payload;
}

// Expects read_npy(p) to throw std::invalid_argument mentioning the file and `problem`.
void expect_rejected(const std::string& p, const std::string& problem) {
  try {
    ag::read_npy(p);
    FAIL() << "read_npy accepted " << p;
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find(p), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << msg;
  }
}

}  // namespace

TEST_F(NpyTest, ReadsNumpyFilesOfEveryDtype) {
  ag::Tensor f = ag::read_npy(data("f32_2x3.npy"));
  EXPECT_EQ(f.dtype(), ag::DType::f32);
  EXPECT_EQ(f.sizes(), (ag::IntList{2, 3}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 0.5, 1, 1.5, 2, 2.5}));

  ag::Tensor i = ag::read_npy(data("i64_5.npy"));
  EXPECT_EQ(i.dtype(), ag::DType::i64);
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{-2, -1, 0, 1, int64_t{1} << 40}));

  ag::Tensor b = ag::read_npy(data("bool_2x2.npy"));
  EXPECT_EQ(b.dtype(), ag::DType::b8);
  EXPECT_EQ(b.to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 1}));

  ag::Tensor h = ag::read_npy(data("f16_4.npy"));
  EXPECT_EQ(h.dtype(), ag::DType::f16);
  EXPECT_EQ(h.to_vector<float>(), (std::vector<float>{1.0f, -2.5f, 65504.0f, 0.000061035156f}));
}

TEST_F(NpyTest, ReadsFortranOrderAsTheSameValues) {
  ag::Tensor d = ag::read_npy(data("f64_fortran_2x3.npy"));
  EXPECT_EQ(d.dtype(), ag::DType::f64);
  EXPECT_EQ(d.sizes(), (ag::IntList{2, 3}));
  EXPECT_TRUE(d.is_contiguous());
  EXPECT_EQ(d.to_vector<double>(), (std::vector<double>{0.25, 1.25, 2.25, 3.25, 4.25, 5.25}));

  ag::Tensor f = ag::read_npy(data("f32_fortran_2x3x2.npy"));
  EXPECT_EQ(f.sizes(), (ag::IntList{2, 3, 2}));
  std::vector<float> want(12);
  for (int k = 0; k < 12; ++k) want[k] = static_cast<float>(k);
  EXPECT_EQ(f.to_vector<float>(), want);
}

TEST_F(NpyTest, ReadsFormatVersions2And3) {
  EXPECT_EQ(ag::read_npy(data("f32_v2_3.npy")).to_vector<float>(), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(ag::read_npy(data("f32_v3_3.npy")).to_vector<float>(), (std::vector<float>{4, 5, 6}));
}

TEST_F(NpyTest, ZeroDimAndEmptyShapes) {
  ag::Tensor s = ag::read_npy(data("f32_scalar.npy"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 3.5f);
  ag::Tensor e = ag::read_npy(data("f32_empty_0x3.npy"));
  EXPECT_EQ(e.sizes(), (ag::IntList{0, 3}));

  ag::write_npy(path("s.npy"), s);
  ag::write_npy(path("e.npy"), e);
  EXPECT_EQ(read_bytes(path("s.npy")), read_bytes(data("f32_scalar.npy")));
  EXPECT_EQ(read_bytes(path("e.npy")), read_bytes(data("f32_empty_0x3.npy")));
  ag::Tensor e2 = ag::read_npy(path("e.npy"));
  EXPECT_EQ(e2.sizes(), (ag::IntList{0, 3}));
  EXPECT_EQ(ag::read_npy(path("s.npy")).item<float>(), 3.5f);
}

TEST_F(NpyTest, WritesTheBytesNumpyWrites) {
  for (const char* name : {"f32_2x3.npy", "i64_5.npy", "bool_2x2.npy", "f16_4.npy"}) {
    ag::write_npy(path(name), ag::read_npy(data(name)));
    EXPECT_EQ(read_bytes(path(name)), read_bytes(data(name))) << name;
  }
}

TEST_F(NpyTest, RoundTripsEveryDtype) {
  ag::Tensor f32 = ag::from_vector(std::vector<float>{1.5f, -2, 3.25f, 0, 7, -8}, {3, 2});
  ag::Tensor f64 = ag::from_vector(std::vector<double>{1e-300, -2.5, 3}, {3});
  ag::Tensor i64 = ag::from_vector(std::vector<int64_t>{-5, 0, 1, 9}, {2, 2});
  ag::Tensor b8 = ag::from_vector(std::vector<bool>{true, false, true}, {1, 3});
  ag::Tensor f16 = f32.to(ag::DType::f16);
  for (const ag::Tensor& t : {f32, f64, i64, b8, f16}) {
    std::string p = path(std::string(ag::dtype_name(t.dtype())) + ".npy");
    ag::write_npy(p, t);
    ag::Tensor r = ag::read_npy(p);
    EXPECT_EQ(r.dtype(), t.dtype());
    EXPECT_EQ(r.sizes(), t.sizes());
    EXPECT_EQ(r.to_vector<double>(), t.to_vector<double>()) << ag::dtype_name(t.dtype());
  }
}

TEST_F(NpyTest, WritesNonContiguousTensorsByValue) {
  ag::Tensor base = ag::from_vector(std::vector<float>{0, 1, 2, 3, 4, 5}, {2, 3});
  ag::Tensor t = base.t();
  ASSERT_FALSE(t.is_contiguous());
  ag::write_npy(path("t.npy"), t);
  ag::Tensor r = ag::read_npy(path("t.npy"));
  EXPECT_EQ(r.sizes(), (ag::IntList{3, 2}));
  EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));

  ag::Tensor sliced = base.slice(1, 1, 3);  // offset and row stride 3
  ag::write_npy(path("s.npy"), sliced);
  EXPECT_EQ(ag::read_npy(path("s.npy")).to_vector<float>(), (std::vector<float>{1, 2, 4, 5}));
}

TEST_F(NpyTest, RejectsBf16WithTheFix) {
  ag::Tensor t = ag::from_vector(std::vector<float>{1, 2}, {2}).to(ag::DType::bf16);
  try {
    ag::write_npy(path("b.npy"), t);
    FAIL() << "bf16 was written";
  } catch (const std::invalid_argument& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("bf16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("to(DType::f32)"), std::string::npos) << msg;
    EXPECT_NE(msg.find(path("b.npy")), std::string::npos) << msg;
  }
  EXPECT_FALSE(fs::exists(path("b.npy")));
}

TEST_F(NpyTest, RejectsMalformedFiles) {
  expect_rejected(path("missing.npy"), "cannot open");
  expect_rejected(write_bytes("magic.npy", "PK\x03\x04 not numpy"), "bad magic");
  std::string good = read_bytes(data("f32_2x3.npy"));
  expect_rejected(write_bytes("trunc.npy", good.substr(0, good.size() - 4)), "truncated data");
  expect_rejected(write_bytes("trunc_header.npy", good.substr(0, 40)), "truncated header");
  expect_rejected(
      write_bytes("dict.npy", npy_bytes("{'descr': '<f4', 'shape': (2,), }", std::string(8, '\0'))),
      "the header lacks one of the keys 'descr', 'fortran_order' and 'shape'");
  expect_rejected(
      write_bytes("syntax.npy", npy_bytes("{'descr': '<f4' 'fortran_order': False}", "")),
      "the header is not a Python literal: a missing ',' at offset 31");
  expect_rejected(
      write_bytes("neg.npy",
                  npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }", "")),
      "negative dimension");
  expect_rejected(
      write_bytes("huge.npy", npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': "
                                        "(4611686018427387904, 8), }",
                                        "")),
      "shape [4611686018427387904, 8] is too large to address");
  expect_rejected(write_bytes("large.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                                                     "'shape': (1000000, 1000000), }",
                                                     std::string(16, '\0'))),
                  "needs 8000000000000 bytes, the file has 16");
  expect_rejected(data("c8_2.npy"), "unsupported dtype '<c8'");
  std::string v9 = good;
  v9[6] = 9;
  expect_rejected(write_bytes("v9.npy", v9), "unsupported format version 9.0");
}

TEST_F(NpyTest, AcceptsHeadersWrittenByOtherWriters) {
  // Double quotes, no trailing comma, keys in another order, extra spaces.
  std::string payload(8, '\0');
  float vals[2] = {1.0f, -1.0f};
  std::memcpy(payload.data(), vals, 8);
  std::string p = write_bytes(
      "other.npy",
      npy_bytes("{ \"shape\" : ( 2 , ) , \"fortran_order\":False,\"descr\":\"<f4\"}", payload));
  EXPECT_EQ(ag::read_npy(p).to_vector<float>(), (std::vector<float>{1, -1}));
}

TEST_F(NpyTest, ReadsBigEndianDataByValue) {
  // Written by NumPy from np.array([1, 2, 3], dtype=">f4").
  ag::Tensor t = ag::read_npy(data("f32_bigendian_3.npy"));
  EXPECT_EQ(t.dtype(), ag::DType::f32);
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST_F(NpyTest, RefusesNonRegularFilesBeforeReadingThem) {
  // A directory opens as an empty stream, /dev/zero never ends and a FIFO without a writer
  // blocks the open: all must be refused from stat alone.
  fs::create_directories(path("dir.npy"));
  expect_rejected(path("dir.npy"), "not a regular file");
  expect_rejected("/dev/zero", "not a regular file");
  ASSERT_EQ(::mkfifo(path("fifo.npy").c_str(), 0600), 0);
  expect_rejected(path("fifo.npy"), "not a regular file");
}

TEST_F(NpyTest, RefusesAHeaderPromisingMoreThanTheFileHolds) {
  // 2^40 f64 elements promised, 16 bytes present: refused from the file size, nothing allocated.
  std::string p = write_bytes("big.npy", npy_bytes("{'descr': '<f8', 'fortran_order': False, "
                                                   "'shape': (1099511627776,), }",
                                                   std::string(16, '\0')));
  expect_rejected(p, "needs 8796093022208 bytes, the file has 16");
}

TEST_F(NpyTest, MessagesEscapeHeaderBytes) {
  std::string p = write_bytes(
      "ctl.npy", npy_bytes("{'descr': '<f4\x07\x1b[31m', 'fortran_order': False, 'shape': (1,), }",
                           std::string(4, '\0')));
  expect_rejected(p, "unsupported dtype '<f4\\x07\\x1b[31m'");
}

TEST_F(NpyTest, WriterRefusesWhatNumpyCannotRead) {
  try {
    ag::write_npy(path("d33.npy"), ag::make_tensor(ag::IntList(33, 1), ag::DType::f32));
    FAIL() << "a 33-dim tensor was written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("33 dims; NumPy reads at most 32"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path("d33.npy")));
  ag::write_npy(path("d32.npy"), ag::make_tensor(ag::IntList(32, 1), ag::DType::f32));
  EXPECT_EQ(ag::read_npy(path("d32.npy")).dim(), 32);
}

TEST_F(NpyTest, WriterRefusesAByteSizeBeyond64Bits) {
  // 2^62 f32 elements (2^64 bytes) as a zero-stride view of one element: the byte count wraps to
  // 0 unless checked, which wrote a header and no data.
  ag::Tensor one = ag::make_tensor({1}, ag::DType::f32);
  ag::Tensor huge;
  try {
    huge = ag::make_view(one, {int64_t{1} << 40, int64_t{1} << 22}, {0, 0}, 0);
  } catch (const std::exception& e) {
    GTEST_SKIP() << "views of this shape are refused already: " << e.what();
  }
  try {
    ag::write_npy(path("huge.npy"), huge);
    FAIL() << "a tensor of 2^64 bytes was written";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("byte size beyond 64 bits"), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(path("huge.npy")));
}

TEST_F(NpyTest, BytesRoundTripInMemory) {
  ag::Tensor t = ag::from_vector(std::vector<double>{1.5, -2, 1e300}, {3, 1});
  std::string bytes = ag::write_npy_bytes(t);
  ag::write_npy(path("t.npy"), t);
  EXPECT_EQ(bytes, read_bytes(path("t.npy")));
  ag::Tensor r = ag::read_npy_bytes(bytes);
  EXPECT_EQ(r.sizes(), (ag::IntList{3, 1}));
  EXPECT_EQ(r.to_vector<double>(), (std::vector<double>{1.5, -2, 1e300}));
  EXPECT_THROW(ag::read_npy_bytes(bytes.substr(0, bytes.size() - 1), "cut"), std::invalid_argument);
}
