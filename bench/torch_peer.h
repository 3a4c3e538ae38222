// Bench-side helpers for comparing against PyTorch measured in the same run: a reader for the
// small JSON files the PyTorch scripts write (../shared/bench/torch_peer/run.sh's TORCH_PEER_JSON,
// bench/torch_ops.py's TORCH_OPS_JSON), and the timing loop both benches share.
//
// The JSON files hold objects of objects of numbers ({"mlp": {"step_ms_min": 5.1, ...}}); the
// reader keeps every number under its dotted path ("mlp.step_ms_min") and skips strings, arrays,
// booleans and null. A file that is missing or malformed is reported in one line and ignored: the
// bench still prints its own times.
#pragma once

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace torch_peer {

class NumberTable {
 public:
  // Numbers of the JSON file named by environment variable `env`; empty when it is unset.
  static NumberTable from_env(const char* env) {
    NumberTable t;
    const char* path = std::getenv(env);
    if (path == nullptr || *path == '\0') return t;
    std::ifstream in(path);
    if (!in) {
      std::fprintf(stderr, "%s=%s: cannot open the file; PyTorch ratios left out\n", env, path);
      return t;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    try {
      t.text_ = ss.str();
      t.parse_value("");
      t.loaded_ = true;
    } catch (const std::runtime_error& e) {
      std::fprintf(stderr, "%s=%s: %s; PyTorch ratios left out\n", env, path, e.what());
      t.values_.clear();
    }
    return t;
  }

  bool loaded() const { return loaded_; }
  std::optional<double> get(const std::string& path) const {
    auto it = values_.find(path);
    if (it == values_.end()) return std::nullopt;
    return it->second;
  }

 private:
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  [[noreturn]] void fail(const char* what) const {
    throw std::runtime_error(std::string("malformed JSON at byte ") + std::to_string(pos_) + ": " +
                             what);
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end");
    return text_[pos_];
  }
  std::string parse_string() {
    if (peek() != '"') fail("expected a string");
    std::string s;
    for (++pos_; pos_ < text_.size() && text_[pos_] != '"'; ++pos_) {
      if (text_[pos_] == '\\') ++pos_;  // keys of ours never hold escapes; keep the next byte
      if (pos_ < text_.size()) s += text_[pos_];
    }
    if (pos_ >= text_.size()) fail("unterminated string");
    ++pos_;
    return s;
  }
  void parse_value(const std::string& path) {
    const char c = peek();
    if (c == '{') {
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return;
      }
      while (true) {
        std::string key = parse_string();
        if (peek() != ':') fail("expected ':'");
        ++pos_;
        parse_value(path.empty() ? key : path + "." + key);
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() != '}') fail("expected ',' or '}'");
        ++pos_;
        return;
      }
    }
    if (c == '[') {
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return;
      }
      for (int i = 0;; ++i) {
        parse_value(path + "." + std::to_string(i));
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        if (peek() != ']') fail("expected ',' or ']'");
        ++pos_;
        return;
      }
    }
    if (c == '"') {
      parse_string();
      return;
    }
    const size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   std::strchr("+-.", text_[pos_]) != nullptr))
      ++pos_;
    const std::string token = text_.substr(start, pos_ - start);
    if (token == "true" || token == "false" || token == "null") return;
    char* end = nullptr;
    const double v = std::strtod(token.c_str(), &end);
    if (token.empty() || end != token.c_str() + token.size()) fail("expected a value");
    values_[path] = v;
  }

  std::string text_;
  size_t pos_ = 0;
  bool loaded_ = false;
  std::map<std::string, double> values_;
};

inline double now_ms() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::milli>(clock::now().time_since_epoch()).count();
}

inline double min_of(const std::vector<double>& v) {
  return *std::min_element(v.begin(), v.end());
}
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace torch_peer
