// Every short sequence of in-place geometry changes (t_, unsqueeze_, squeeze_), writes (to the
// input, to a view of it) and reads, each with grad on or under no_grad, applied to one input:
// aot_function must give eager's outputs, the input's geometry, values and version, and the
// leaf's gradient, raise where eager's forward or backward raises, or refuse the program with
// trace::UnsupportedError; the input is a non-leaf, a leaf, or a non-leaf passed with a view of
// it. The fuzzer (AotProgramFuzz) draws much larger programs at random; this
// walks the small ones where the grad modes of geometry changes and writes interleave, all of
// them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "aot/eager_oracle.h"
#include "aotgrad/aotgrad.h"
#include "testing/values.h"
#include "trace/functionalize.h"

namespace ag = aotgrad;
using ag::Tensor;
using ag::testing::OracleSetup;
using ag::testing::test_input;

namespace {

struct Step {
  const char* name;
  bool grad_on;
  std::function<void(Tensor&, std::vector<Tensor>&)> apply;  // the input, the reads so far
};

const std::vector<Step>& steps() {
  static const std::vector<Step> all = {
      {"t_", true, [](Tensor& x, auto&) { ag::t_(x); }},
      {"t_", false, [](Tensor& x, auto&) { ag::t_(x); }},
      {"unsqueeze_(0)", true, [](Tensor& x, auto&) { ag::unsqueeze_(x, 0); }},
      {"unsqueeze_(0)", false, [](Tensor& x, auto&) { ag::unsqueeze_(x, 0); }},
      {"squeeze_(0)", true, [](Tensor& x, auto&) { ag::squeeze_(x, 0); }},
      {"squeeze_(0)", false, [](Tensor& x, auto&) { ag::squeeze_(x, 0); }},
      {"mul_(2)", true, [](Tensor& x, auto&) { x.mul_(2.0); }},
      {"add_(1)", false, [](Tensor& x, auto&) { x.add_(1.0); }},
      {"select(-1, 1).mul_(3)", true, [](Tensor& x, auto&) { x.select(-1, 1).mul_(3.0); }},
      {"t().mul_(2)", true, [](Tensor& x, auto&) { x.t().mul_(2.0); }},
      {"detach().add_(1)", true, [](Tensor& x, auto&) { x.detach().add_(1.0); }},
      {"read sin()", true, [](Tensor& x, std::vector<Tensor>& reads) { reads.push_back(x.sin()); }},
  };
  return all;
}

struct Input {
  const char* name;
  std::function<OracleSetup()> make;
};

std::string describe(const Input& in, const std::vector<size_t>& program) {
  std::string s = in.name;
  for (size_t k : program)
    s += std::string(", ") + steps()[k].name + (steps()[k].grad_on ? "" : " under no_grad");
  return s;
}

// The backward of a fixed weighted sum of the outputs and inputs that require grad; the error it
// raised, or "" (and "none" when nothing requires grad).
std::string backward_error(const std::vector<Tensor>& ts) {
  try {
    return ag::testing::oracle_detail::backward_weighted(ts) ? "" : "none";
  } catch (const std::exception& e) {
    return std::string("raised: ") + e.what();
  }
}

struct Counts {
  size_t compared = 0, refused = 0, eager_raised = 0;
};

void check(const Input& in, const std::vector<size_t>& program, Counts& counts) {
  using namespace ag::testing::oracle_detail;
  const std::string where = describe(in, program);
  ag::testing::OracleFn fn = [program](std::vector<Tensor> a) {
    std::vector<Tensor> reads;
    for (size_t k : program) {
      const Step& s = steps()[k];
      if (s.grad_on) {
        s.apply(a[0], reads);
      } else {
        ag::NoGradGuard no_grad;
        s.apply(a[0], reads);
      }
    }
    reads.push_back(a[0].cos());
    reads.push_back(a[0]);
    return reads;
  };
  Run e = prepare(in.make);
  try {
    e.outs = fn(e.setup.inputs);
  } catch (const std::exception&) {
    ++counts.eager_raised;  // the compiled function must raise too
    Run c = prepare(in.make);
    ag::AotConfig config;
    config.fw_compiler = "interpreter";
    EXPECT_ANY_THROW(ag::aot_function(fn, config)(c.setup.inputs)) << where;
    return;
  }
  // The interpreter whatever AOTGRAD_COMPILER says: the walk checks the runtime wrappers and the
  // traced graphs, and thousands of distinct small graphs would each be a C++ build on cpp (8
  // minutes); the cpp compiler's values are CppDifferentialFuzz's and the MetadataMutation
  // tests' under the cpp stage.
  ag::AotConfig config;
  config.fw_compiler = "interpreter";
  auto f = ag::aot_function(fn, config);
  Run c = prepare(in.make);
  try {
    c.outs = f(c.setup.inputs);
  } catch (const ag::trace::UnsupportedError&) {
    ++counts.refused;
    return;
  } catch (const std::exception& x) {
    ADD_FAILURE() << where << ": eager ran, the compiled function raised: " << x.what();
    return;
  }
  ++counts.compared;
  compare_runs(c, e, where);
  std::vector<Tensor> es = e.outs, cs = c.outs;
  es.insert(es.end(), e.setup.inputs.begin(), e.setup.inputs.end());
  cs.insert(cs.end(), c.setup.inputs.begin(), c.setup.inputs.end());
  const std::string eager_error = backward_error(es), compiled_error = backward_error(cs);
  ASSERT_EQ(eager_error.empty(), compiled_error.empty())
      << where << ": eager backward " << (eager_error.empty() ? "ran" : eager_error)
      << ", compiled backward " << (compiled_error.empty() ? "ran" : compiled_error);
  if (!eager_error.empty()) return;
  for (size_t l = 0; l < e.setup.leaves.size(); ++l) {
    Tensor eg = e.setup.leaves[l].grad(), cg = c.setup.leaves[l].grad();
    ASSERT_EQ(cg.defined(), eg.defined()) << where << ": grad of leaf " << l;
    if (eg.defined()) {
      EXPECT_EQ(ag::shape_to_string(cg.sizes()), ag::shape_to_string(eg.sizes())) << where;
      EXPECT_EQ(ag::shape_to_string(cg.strides()), ag::shape_to_string(eg.strides())) << where;
      if (cg.sizes() == eg.sizes()) {
        EXPECT_TRUE(close_values(cg, eg)) << where << ": grad of leaf " << l;
      }
    }
  }
}

// Every program of `length` steps on `in`, in lexicographic order.
void check_all(const Input& in, size_t length, Counts& counts) {
  std::vector<size_t> program(length, 0);
  while (true) {
    check(in, program, counts);
    size_t d = length;
    while (d > 0 && ++program[d - 1] == steps().size()) program[--d] = 0;
    if (d == 0) return;
  }
}

OracleSetup non_leaf(const ag::IntList& sizes) {
  Tensor leaf = test_input(sizes);
  return {{leaf * 2.0}, {leaf}};
}

// A square non-leaf and a caller's view of it (its columns 1 and 2, as rows): a synthetic base
// whose member x is the view's _base in eager. Square, so t_ keeps the sizes the view's
// regenerated history passes on.
OracleSetup with_view(const ag::IntList& sizes) {
  Tensor leaf = test_input(sizes);
  Tensor x = leaf * 2.0;
  return {{x, x.t().slice(0, 1, sizes[1])}, {leaf}};
}

// A square leaf and a caller's view of it, as with_view.
OracleSetup leaf_with_view(const ag::IntList& sizes) {
  Tensor t = test_input(sizes);
  return {{t, t.t().slice(0, 1, sizes[1])}, {t}};
}

// A leaf that requires grad, passed itself.
OracleSetup leaf(const ag::IntList& sizes) {
  Tensor t = test_input(sizes);
  return {{t}, {t}};
}

// The inputs both walks run every program on.
const std::vector<Input>& inputs() {
  static const std::vector<Input> all = {
      {"square non-leaf",
       [] {
         return non_leaf({3, 3});
       }},
      {"non-square non-leaf",
       [] {
         return non_leaf({3, 4});
       }},
      {"square leaf",
       [] {
         return leaf({3, 3});
       }},
      {"non-square leaf",
       [] {
         return leaf({3, 4});
       }},
      {"non-leaf and a view of it",
       [] {
         return with_view({3, 3});
       }},
      {"leaf and a view of it",
       [] {
         return leaf_with_view({3, 3});
       }},
  };
  return all;
}

}  // namespace

// AOTGRAD_METADATA_SEQUENCES_LENGTH=n walks every program of n steps on each input (4: about
// 124,000 programs, a few minutes; scripts/fuzz-style runs outside CI).
TEST(MetadataSequences, LongerModeFromTheEnvironment) {
  const char* env = std::getenv("AOTGRAD_METADATA_SEQUENCES_LENGTH");
  if (!env) GTEST_SKIP() << "set AOTGRAD_METADATA_SEQUENCES_LENGTH to walk longer programs";
  const size_t length = std::strtoul(env, nullptr, 10);
  ASSERT_GT(length, 0u) << "AOTGRAD_METADATA_SEQUENCES_LENGTH must be a positive count";
  Counts counts;
  for (const Input& input : inputs()) check_all(input, length, counts);
  std::printf("programs compared with eager: %zu, refused: %zu, raised by eager: %zu\n",
              counts.compared, counts.refused, counts.eager_raised);
}

TEST(MetadataSequences, EveryShortProgramIsLikeEagerOrRefused) {
  Counts counts;
  for (const Input& input : inputs())
    for (size_t length = 1; length <= 3; ++length) check_all(input, length, counts);
  std::printf("programs compared with eager: %zu, refused: %zu, raised by eager: %zu\n",
              counts.compared, counts.refused, counts.eager_raised);
  // Not vacuous: most programs run and are compared.
  EXPECT_GT(counts.compared, 4 * counts.refused);
  EXPECT_GT(counts.compared, 1000u);
}
