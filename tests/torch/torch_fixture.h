// Reading the PyTorch-oracle fixtures under tests/data/torch/ (written by
// tools/export_torch_graph.py; docs/torch_oracle.md): one directory per fixture with graph.txt,
// manifest.json and .npy files. The manifest is flat JSON of strings, numbers, lists and objects;
// a small reader for exactly that is here so the tests need no JSON library.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aotgrad/tensor.h"

namespace aotgrad::testing::torch {

// A parsed JSON value (null, bool, number, string, list or object).
struct Json {
  enum class Kind { null, boolean, number, string, list, object };
  Kind kind = Kind::null;
  bool b = false;
  double num = 0.0;
  std::string str;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json& at(const std::string& key) const;  // throws naming the key when absent
  bool has(const std::string& key) const { return fields.count(key) > 0; }
};
// Throws std::invalid_argument with the byte offset of the first error.
Json parse_json(const std::string& text);

struct Fixture {
  std::string name;
  std::string dir;
  std::string graph_text;
  std::string mode;  // "forward" or "backward_graph" (PyTorch's joint graph)
  double rtol = 0.0, atol = 0.0;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;  // PyTorch's, in graph output order
  std::vector<Tensor> tangents;
  std::vector<size_t> tangent_of_output;           // output index each tangent belongs to
  std::vector<std::pair<size_t, Tensor>> grads;    // (input index, PyTorch's gradient)
  std::vector<std::pair<size_t, Tensor>> mutated;  // (input index, its value after the step)
  // Per reference file (output<k>.npy, grad<i>.npy, mutated<i>.npy): how far float32 alone moves
  // PyTorch's value (the largest of |f32 - f64| and |f32 - f32 on 1-ulp nudged inputs|), for the
  // whole-model fixtures; absent for the rest (0).
  std::map<std::string, double> noise;

  // The absolute tolerance for reference file `file`: atol plus kNoiseFactor times its noise.
  double atol_for(const std::string& file) const;
};

// How many noise floors a result may stray from PyTorch's float32 value: ours and PyTorch's each
// lie about one floor from the float64 truth, on either side, and one nudge samples the floor.
inline constexpr double kNoiseFactor = 4.0;

// Directory of the fixtures (AOTGRAD_TEST_DATA/torch).
std::string fixture_root();
// Directory of the whole-model training steps (AOTGRAD_TEST_DATA/torch_models): raw make_fx
// graphs, with in-place ops, that run through GraphProgram's functionalization.
std::string model_fixture_root();
// Names of every fixture directory under `root` (those holding a manifest.json), sorted.
std::vector<std::string> fixture_names(const std::string& root = fixture_root());
// Loads one fixture; throws naming the file on a missing or malformed one.
Fixture load_fixture(const std::string& name, const std::string& root = fixture_root());
std::string read_text(const std::string& path);

// Dtype, shape and every element within atol + rtol * |expected| (equal infinities and NaNs
// match); the failure names `what`, the worst element and its error.
::testing::AssertionResult close_to_torch(const Tensor& actual, const Tensor& expected, double rtol,
                                          double atol, const std::string& what);

}  // namespace aotgrad::testing::torch
