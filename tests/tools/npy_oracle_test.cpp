// read_npy against NumPy's own verdicts: tests/data/npy/oracle/ holds ~500 small .npy files and
// expected.txt, what numpy.load (NumPy 1.24) made of each (tools/npy_oracle.py writes both; see
// its docstring for the line format). Reading a file NumPy reads must give its dtype, shape and
// values; a file NumPy refuses must be refused with a one-line message naming the file; and the
// files np.save wrote must come back byte for byte from write_npy.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "aotgrad/aotgrad.h"

namespace ag = aotgrad;

namespace {

std::string oracle_dir() {
  return std::string(AOTGRAD_TEST_DATA) + "/npy/oracle/";
}

std::string read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// FNV-1a 64 of the elements' bytes, as tools/npy_oracle.py computes it.
std::string fnv1a64(const ag::Tensor& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* p = reinterpret_cast<const unsigned char*>(t.impl()->data_bytes());
  size_t n = static_cast<size_t>(t.numel()) * ag::itemsize(t.dtype());
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  char out[17];
  std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
  return out;
}

std::string shape_text(const ag::IntList& sizes) {
  std::string out = "[";
  for (size_t i = 0; i < sizes.size(); ++i) out += (i ? "," : "") + std::to_string(sizes[i]);
  return out + "]";
}

struct Expectation {
  std::string file, verdict, dtype, shape, digest;
  bool exact = false;
};

std::vector<Expectation> expectations() {
  std::ifstream in(oracle_dir() + "expected.txt");
  std::vector<Expectation> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line.substr(0, line.find("  #")));
    Expectation e;
    ss >> e.file >> e.verdict;
    if (e.verdict == "ok") {
      std::string flag;
      ss >> e.dtype >> e.shape >> e.digest >> flag;
      e.exact = flag == "exact";
    }
    out.push_back(e);
  }
  return out;
}

// "" when read_npy refuses `path` as it should: std::invalid_argument, one printable line naming
// the file; otherwise what went wrong.
std::string refusal_problem(const std::string& path) {
  try {
    ag::Tensor t = ag::read_npy(path);
    return "accepted as " + std::string(ag::dtype_name(t.dtype())) + shape_text(t.sizes());
  } catch (const std::invalid_argument& e) {
    std::string m = e.what();
    if (m.find(path) == std::string::npos) return "message does not name the file: " + m;
    if (m.size() > 300 + path.size()) return "message too long: " + m;
    for (char c : m)
      if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
        return "message has a non-printable byte: " + m;
  }
  return "";
}

}  // namespace

TEST(NpyOracle, ReadsExactlyWhatNumpyReads) {
  std::vector<Expectation> all = expectations();
  ASSERT_GT(all.size(), 400u) << "tests/data/npy/oracle/expected.txt is missing or short";
  size_t read = 0, refused = 0;
  for (const Expectation& e : all) {
    std::string path = oracle_dir() + e.file;
    if (e.verdict != "ok") {
      EXPECT_EQ(refusal_problem(path), "") << e.file << " (NumPy: " << e.verdict << ")";
      ++refused;
      continue;
    }
    ag::Tensor t;
    try {
      t = ag::read_npy(path);
    } catch (const std::exception& err) {
      ADD_FAILURE() << e.file << ": NumPy reads it, read_npy refused: " << err.what();
      continue;
    }
    EXPECT_EQ(ag::dtype_name(t.dtype()), e.dtype) << e.file;
    EXPECT_EQ(shape_text(t.sizes()), e.shape) << e.file;
    EXPECT_EQ(fnv1a64(t), e.digest) << e.file << ": values differ from NumPy's";
    EXPECT_TRUE(t.is_contiguous()) << e.file;
    if (e.exact) {
      EXPECT_TRUE(ag::write_npy_bytes(t) == read_bytes(path)) << e.file << ": not np.save's bytes";
    }
    ++read;
  }
  EXPECT_GT(read, 200u);
  EXPECT_GT(refused, 200u);
}

TEST(NpyOracle, BytesInMemoryReadLikeFiles) {
  for (const Expectation& e : expectations()) {
    std::string bytes = read_bytes(oracle_dir() + e.file);
    if (e.verdict != "ok") {
      EXPECT_THROW(ag::read_npy_bytes(bytes, e.file), std::invalid_argument) << e.file;
      continue;
    }
    try {
      ag::Tensor t = ag::read_npy_bytes(bytes, e.file);
      EXPECT_EQ(shape_text(t.sizes()), e.shape) << e.file;
      EXPECT_EQ(fnv1a64(t), e.digest) << e.file;
    } catch (const std::exception& err) {
      ADD_FAILURE() << e.file << ": NumPy reads it, read_npy_bytes refused: " << err.what();
    }
  }
}
