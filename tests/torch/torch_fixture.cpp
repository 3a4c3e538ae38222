#include "torch/torch_fixture.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "aotgrad/npy.h"

namespace aotgrad::testing::torch {
namespace {

class JsonReader {
 public:
  explicit JsonReader(const std::string& text) : t_(text) {}

  Json document() {
    Json j = value();
    space();
    if (p_ != t_.size()) fail("trailing text");
    return j;
  }

 private:
  Json value() {
    space();
    Json j;
    char c = peek();
    if (c == '{') {
      j.kind = Json::Kind::object;
      ++p_;
      space();
      if (peek() == '}') return ++p_, j;
      while (true) {
        space();
        std::string key = string();
        space();
        expect(':');
        j.fields[key] = value();
        space();
        if (peek() == '}') return ++p_, j;
        expect(',');
      }
    }
    if (c == '[') {
      j.kind = Json::Kind::list;
      ++p_;
      space();
      if (peek() == ']') return ++p_, j;
      while (true) {
        j.items.push_back(value());
        space();
        if (peek() == ']') return ++p_, j;
        expect(',');
      }
    }
    if (c == '"') {
      j.kind = Json::Kind::string;
      j.str = string();
      return j;
    }
    for (const char* word : {"true", "false", "null"}) {
      if (t_.compare(p_, std::strlen(word), word) == 0) {
        p_ += std::strlen(word);
        j.kind = word[0] == 'n' ? Json::Kind::null : Json::Kind::boolean;
        j.b = word[0] == 't';
        return j;
      }
    }
    size_t used = 0;
    try {
      j.num = std::stod(t_.substr(p_), &used);
    } catch (const std::logic_error&) {
      fail("expected a value");
    }
    p_ += used;
    j.kind = Json::Kind::number;
    return j;
  }

  std::string string() {
    expect('"');
    std::string out;
    while (p_ < t_.size() && t_[p_] != '"') {
      if (t_[p_] == '\\') {
        ++p_;
        if (p_ >= t_.size()) break;
        char e = t_[p_];
        out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
      } else {
        out += t_[p_];
      }
      ++p_;
    }
    expect('"');
    return out;
  }

  char peek() const { return p_ < t_.size() ? t_[p_] : '\0'; }
  void space() {
    while (p_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[p_]))) ++p_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++p_;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("JSON, byte " + std::to_string(p_) + ": " + what);
  }

  const std::string& t_;
  size_t p_ = 0;
};

std::vector<Tensor> read_all(const std::string& dir, const Json& files) {
  std::vector<Tensor> out;
  for (const Json& f : files.items) out.push_back(read_npy(dir + "/" + f.str));
  return out;
}

}  // namespace

const Json& Json::at(const std::string& key) const {
  auto it = fields.find(key);
  if (it == fields.end()) throw std::invalid_argument("manifest has no field '" + key + "'");
  return it->second;
}

Json parse_json(const std::string& text) {
  return JsonReader(text).document();
}

std::string fixture_root() {
  return AOTGRAD_TEST_DATA "/torch";
}
std::string model_fixture_root() {
  return AOTGRAD_TEST_DATA "/torch_models";
}

std::vector<std::string> fixture_names(const std::string& root) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(root))
    if (e.is_directory() && std::filesystem::exists(e.path() / "manifest.json"))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument("cannot open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Fixture load_fixture(const std::string& name, const std::string& root) {
  Fixture f;
  f.name = name;
  f.dir = root + "/" + name;
  Json m;
  try {
    m = parse_json(read_text(f.dir + "/manifest.json"));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(f.dir + "/manifest.json: " + e.what());
  }
  f.graph_text = read_text(f.dir + "/graph.txt");
  f.mode = m.at("mode").str;
  f.rtol = m.at("rtol").num;
  f.atol = m.at("atol").num;
  f.inputs = read_all(f.dir, m.at("inputs"));
  f.outputs = read_all(f.dir, m.at("outputs"));
  f.tangents = read_all(f.dir, m.at("tangents"));
  if (m.has("tangent_of_output"))
    for (const Json& k : m.at("tangent_of_output").items)
      f.tangent_of_output.push_back(static_cast<size_t>(k.num));
  for (const Json& g : m.at("grads").items)
    f.grads.emplace_back(static_cast<size_t>(g.at("input").num),
                         read_npy(f.dir + "/" + g.at("file").str));
  if (m.has("mutated"))
    for (const Json& g : m.at("mutated").items)
      f.mutated.emplace_back(static_cast<size_t>(g.at("input").num),
                             read_npy(f.dir + "/" + g.at("file").str));
  if (m.has("noise"))
    for (const auto& [file, value] : m.at("noise").fields) f.noise[file] = value.num;
  return f;
}

double Fixture::atol_for(const std::string& file) const {
  auto it = noise.find(file);
  return atol + (it == noise.end() ? 0.0 : kNoiseFactor * it->second);
}

::testing::AssertionResult close_to_torch(const Tensor& actual, const Tensor& expected, double rtol,
                                          double atol, const std::string& what) {
  if (!actual.defined()) return ::testing::AssertionFailure() << what << ": aotgrad gave no tensor";
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << what << ": dtype " << dtype_name(actual.dtype())
                                         << ", PyTorch " << dtype_name(expected.dtype());
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure() << what << ": shape " << shape_to_string(actual.sizes())
                                         << ", PyTorch " << shape_to_string(expected.sizes());
  std::vector<double> x = actual.to_vector<double>(), y = expected.to_vector<double>();
  size_t worst = 0, bad = 0;
  double worst_excess = -1.0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (x[i] == y[i] || (std::isnan(x[i]) && std::isnan(y[i]))) continue;
    double err = std::abs(x[i] - y[i]);
    double excess = std::isnan(err) ? INFINITY : err - (atol + rtol * std::abs(y[i]));
    if (excess > 0) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << what << ": " << bad << " of " << x.size() << " element(s) differ beyond atol " << atol
         << " + rtol " << rtol << "; worst, element " << worst << ": aotgrad " << x[worst]
         << ", PyTorch " << y[worst] << " (|diff| " << std::abs(x[worst] - y[worst]) << ")";
}

}  // namespace aotgrad::testing::torch
