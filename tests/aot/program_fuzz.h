// Random programs for the aot_function-vs-eager fuzzer (program_fuzz_test.cpp).
//
// Reading guide: a Program is plain data. Its setup lists roots (fresh leaves, or a root times 1
// so it is a non-leaf) and inputs (a root, a chain of views of a root, or an earlier input passed
// again); its body is a list of Steps over a value table that starts with the inputs, each step
// either appending a new value (an op or a view of earlier values) or writing an earlier value in
// place (data or geometry). Program::run executes the body (eagerly, or under aot_function's
// tracer), Program::make builds a fresh setup, Program::to_string prints it all as C++.
//
// ProgramGenerator draws a program from a seed, step by step, on a live eager setup: it picks an
// op whose operands fit the shapes the values have at that point, runs it, and drops it when
// eager raises. draw_program then runs the whole program once more from scratch, with the
// oracle's backward, and draws again when eager rejects it (a tensor saved for backward written
// in place, ...): only programs eager accepts go to the oracle.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "aot/eager_oracle.h"
#include "aotgrad/aotgrad.h"

namespace aotgrad::testing::program_fuzz {

enum class Op : uint8_t {
  // pointwise, reductions, linear algebra, copies: a new value
  neg,
  sin,
  cos,
  tanh,
  sigmoid,
  relu,
  abs,
  add,
  sub,
  mul,
  add_scalar,
  sub_scalar,
  mul_scalar,
  gt_scalar,
  where,
  sum_all,
  sum_dim,
  mean_dim,
  mm,
  matmul,
  clone,
  contiguous,
  detach,
  cat,
  // views: a new value sharing its operand's storage
  view,
  reshape,
  transpose,
  t,
  permute,
  slice,
  select,
  unsqueeze,
  squeeze,
  expand,
  as_strided,
  alias,
  // in place on an earlier value: data
  add_,
  sub_,
  mul_,
  copy_,
  add_scalar_,
  mul_scalar_,
  zero_,
  fill_,
  relu_,
  sigmoid_,
  tanh_,
  // in place on an earlier value: geometry
  t_,
  transpose_,
  unsqueeze_,
  squeeze_,
  // the second generator's ops (draw_program's `generator` 2), after the first's so that its
  // programs draw as they did
  exp,
  div_scalar,
  softmax,
  log_softmax,
  amax,
  split_piece,  // one piece of a multi-output view
  chunk_piece,
  unbind_piece,
  div_scalar_,
  leaky_relu_,
  silu_,
  hardtanh_,
};

// How a step is printed and what it needs; one row per op.
enum class Form : uint8_t {
  method,         // a.name()
  method_tensor,  // a.name(b)
  method_scalar,  // a.name(s)
  method_ints,    // a.name(i0, i1, ...)
  method_list,    // a.name({i0, i1, ...})
  reduce_dim,     // a.name({i0}, i1 != 0)
  as_strided,     // a.name({sizes}, {strides}) with ints = sizes ++ strides
  cat,            // ag::cat({a, b}, i0)
  where,          // ag::where(a.gt(0), a, b)
  free_inplace,   // ag::name(a, i0, ...)
  piece,          // ag::name(a, i0, ...)[last int]
};

struct OpRow {
  Op op;
  const char* name;
  Form form;
  bool in_place;  // writes operand a instead of making a value
};

const OpRow& row(Op op);

struct Step {
  Op op = Op::neg;
  int a = -1, b = -1;  // value indices; -1 for the previous link of a setup view chain
  IntList ints;
  double scalar = 0;
  bool no_grad = false;  // runs under NoGradGuard
};

struct Root {
  IntList sizes;
  bool requires_grad = false;
  uint64_t seed = 0;
  int times_one_of = -1;  // >= 0: this root is roots[times_one_of] * 1.0, a non-leaf
};

struct InputSpec {
  int root = -1;            // the root it views (or is)
  std::vector<Step> views;  // applied to the root in order
  int same_as = -1;         // >= 0: the very tensor of an earlier input (a duplicated input)
};

struct Program {
  uint64_t seed = 0;
  int attempt = 0;    // which draw from `seed` eager accepted
  int generator = 1;  // which op set drew it (draw_program)
  DType dtype = DType::f64;
  std::vector<Root> roots;
  std::vector<InputSpec> inputs;
  std::vector<Step> steps;
  std::vector<int> outputs;  // value indices

  OracleSetup make() const;
  std::vector<Tensor> run(std::vector<Tensor> inputs) const;
  // The value table after every step (the generator's view of the program so far).
  std::vector<Tensor> run_values(std::vector<Tensor> inputs) const;
  std::string to_string() const;
};

// Runs one step on `values`, appending its result when it makes one.
void apply_step(const Step& s, std::vector<Tensor>& values);

// A program eager accepts (the body and the oracle's backward run without raising), or nullopt
// when `attempts` draws from `seed` gave none. `discarded` counts the rejected draws. Generator 1
// draws the ops up to squeeze_ (every seed replayed in program_fuzz_test.cpp was drawn so);
// generator 2 adds exp, div, softmax, log_softmax, amax, pieces of split, chunk and unbind, and
// div_, leaky_relu_, silu_, hardtanh_ in place; generator 3 draws generator 2's ops and also
// makes inputs the caller viewed under no_grad or took as a piece of split, chunk or unbind.
std::optional<Program> draw_program(uint64_t seed, int attempts, int* discarded, int generator = 1);

}  // namespace aotgrad::testing::program_fuzz
