// Drawing, running and printing the fuzzer's random programs (program_fuzz.h).
#include "aot/program_fuzz.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <sstream>

namespace aotgrad::testing::program_fuzz {

namespace {

constexpr std::array kOps = {
    OpRow{Op::neg, "neg", Form::method, false},
    OpRow{Op::sin, "sin", Form::method, false},
    OpRow{Op::cos, "cos", Form::method, false},
    OpRow{Op::tanh, "tanh", Form::method, false},
    OpRow{Op::sigmoid, "sigmoid", Form::method, false},
    OpRow{Op::relu, "relu", Form::method, false},
    OpRow{Op::abs, "abs", Form::method, false},
    OpRow{Op::add, "add", Form::method_tensor, false},
    OpRow{Op::sub, "sub", Form::method_tensor, false},
    OpRow{Op::mul, "mul", Form::method_tensor, false},
    OpRow{Op::add_scalar, "add", Form::method_scalar, false},
    OpRow{Op::sub_scalar, "sub", Form::method_scalar, false},
    OpRow{Op::mul_scalar, "mul", Form::method_scalar, false},
    OpRow{Op::gt_scalar, "gt", Form::method_scalar, false},
    OpRow{Op::where, "where", Form::where, false},
    OpRow{Op::sum_all, "sum", Form::method, false},
    OpRow{Op::sum_dim, "sum", Form::reduce_dim, false},
    OpRow{Op::mean_dim, "mean", Form::reduce_dim, false},
    OpRow{Op::mm, "mm", Form::method_tensor, false},
    OpRow{Op::matmul, "matmul", Form::method_tensor, false},
    OpRow{Op::clone, "clone", Form::method, false},
    OpRow{Op::contiguous, "contiguous", Form::method, false},
    OpRow{Op::detach, "detach", Form::method, false},
    OpRow{Op::cat, "cat", Form::cat, false},
    OpRow{Op::view, "view", Form::method_list, false},
    OpRow{Op::reshape, "reshape", Form::method_list, false},
    OpRow{Op::transpose, "transpose", Form::method_ints, false},
    OpRow{Op::t, "t", Form::method, false},
    OpRow{Op::permute, "permute", Form::method_list, false},
    OpRow{Op::slice, "slice", Form::method_ints, false},
    OpRow{Op::select, "select", Form::method_ints, false},
    OpRow{Op::unsqueeze, "unsqueeze", Form::method_ints, false},
    OpRow{Op::squeeze, "squeeze", Form::method_ints, false},
    OpRow{Op::expand, "expand", Form::method_list, false},
    OpRow{Op::as_strided, "as_strided", Form::as_strided, false},
    OpRow{Op::alias, "alias", Form::method, false},
    OpRow{Op::add_, "add_", Form::method_tensor, true},
    OpRow{Op::sub_, "sub_", Form::method_tensor, true},
    OpRow{Op::mul_, "mul_", Form::method_tensor, true},
    OpRow{Op::copy_, "copy_", Form::method_tensor, true},
    OpRow{Op::add_scalar_, "add_", Form::method_scalar, true},
    OpRow{Op::mul_scalar_, "mul_", Form::method_scalar, true},
    OpRow{Op::zero_, "zero_", Form::method, true},
    OpRow{Op::fill_, "fill_", Form::method_scalar, true},
    OpRow{Op::relu_, "relu_", Form::free_inplace, true},
    OpRow{Op::sigmoid_, "sigmoid_", Form::free_inplace, true},
    OpRow{Op::tanh_, "tanh_", Form::free_inplace, true},
    OpRow{Op::t_, "t_", Form::free_inplace, true},
    OpRow{Op::transpose_, "transpose_", Form::free_inplace, true},
    OpRow{Op::unsqueeze_, "unsqueeze_", Form::free_inplace, true},
    OpRow{Op::squeeze_, "squeeze_", Form::free_inplace, true},
    OpRow{Op::exp, "exp", Form::method, false},
    OpRow{Op::div_scalar, "div", Form::method_scalar, false},
    OpRow{Op::softmax, "softmax", Form::method_ints, false},
    OpRow{Op::log_softmax, "log_softmax", Form::method_ints, false},
    OpRow{Op::amax, "amax", Form::reduce_dim, false},
    OpRow{Op::split_piece, "split", Form::piece, false},
    OpRow{Op::chunk_piece, "chunk", Form::piece, false},
    OpRow{Op::unbind_piece, "unbind", Form::piece, false},
    OpRow{Op::div_scalar_, "div_", Form::method_scalar, true},
    OpRow{Op::leaky_relu_, "leaky_relu_", Form::free_inplace, true},
    OpRow{Op::silu_, "silu_", Form::free_inplace, true},
    OpRow{Op::hardtanh_, "hardtanh_", Form::free_inplace, true},
};

constexpr bool table_is_in_enum_order() {
  for (size_t i = 0; i < kOps.size(); ++i)
    if (static_cast<size_t>(kOps[i].op) != i) return false;
  return true;
}
static_assert(table_is_in_enum_order(), "kOps rows must follow the Op enum");

Tensor apply_op(const Step& s, Tensor a, const Tensor& b) {
  const IntList& n = s.ints;
  switch (s.op) {
    case Op::neg:
      return a.neg();
    case Op::sin:
      return a.sin();
    case Op::cos:
      return a.cos();
    case Op::tanh:
      return a.tanh();
    case Op::sigmoid:
      return a.sigmoid();
    case Op::relu:
      return a.relu();
    case Op::abs:
      return a.abs();
    case Op::add:
      return a.add(b);
    case Op::sub:
      return a.sub(b);
    case Op::mul:
      return a.mul(b);
    case Op::add_scalar:
      return a.add(s.scalar);
    case Op::sub_scalar:
      return a.sub(s.scalar);
    case Op::mul_scalar:
      return a.mul(s.scalar);
    case Op::gt_scalar:
      return a.gt(s.scalar);
    case Op::where:
      return aotgrad::where(a.gt(0.0), a, b);
    case Op::sum_all:
      return a.sum();
    case Op::sum_dim:
      return a.sum(IntList{n[0]}, n[1] != 0);
    case Op::mean_dim:
      return a.mean(IntList{n[0]}, n[1] != 0);
    case Op::mm:
      return a.mm(b);
    case Op::matmul:
      return a.matmul(b);
    case Op::clone:
      return a.clone();
    case Op::contiguous:
      return a.contiguous();
    case Op::detach:
      return a.detach();
    case Op::cat:
      return aotgrad::cat({a, b}, n[0]);
    case Op::view:
      return a.view(n);
    case Op::reshape:
      return a.reshape(n);
    case Op::transpose:
      return a.transpose(n[0], n[1]);
    case Op::t:
      return a.t();
    case Op::permute:
      return a.permute(n);
    case Op::slice:
      return a.slice(n[0], n[1], n[2], n[3]);
    case Op::select:
      return a.select(n[0], n[1]);
    case Op::unsqueeze:
      return a.unsqueeze(n[0]);
    case Op::squeeze:
      return a.squeeze(n[0]);
    case Op::expand:
      return a.expand(n);
    case Op::as_strided: {
      size_t half = n.size() / 2;
      return a.as_strided(IntList(n.begin(), n.begin() + half), IntList(n.begin() + half, n.end()));
    }
    case Op::alias:
      return a.alias();
    case Op::add_:
      return a.add_(b);
    case Op::sub_:
      return a.sub_(b);
    case Op::mul_:
      return a.mul_(b);
    case Op::copy_:
      return a.copy_(b);
    case Op::add_scalar_:
      return a.add_(s.scalar);
    case Op::mul_scalar_:
      return a.mul_(s.scalar);
    case Op::zero_:
      return a.zero_();
    case Op::fill_:
      return a.fill_(s.scalar);
    case Op::relu_:
      return aotgrad::relu_(a);
    case Op::sigmoid_:
      return aotgrad::sigmoid_(a);
    case Op::tanh_:
      return aotgrad::tanh_(a);
    case Op::t_:
      return aotgrad::t_(a);
    case Op::transpose_:
      return aotgrad::transpose_(a, n[0], n[1]);
    case Op::unsqueeze_:
      return aotgrad::unsqueeze_(a, n[0]);
    case Op::squeeze_:
      return aotgrad::squeeze_(a, n[0]);
    case Op::exp:
      return a.exp();
    case Op::div_scalar:
      return a.div(s.scalar);
    case Op::softmax:
      return a.softmax(n[0]);
    case Op::log_softmax:
      return a.log_softmax(n[0]);
    case Op::amax:
      return a.amax(IntList{n[0]}, n[1] != 0);
    case Op::split_piece:
      return aotgrad::split(a, n[0], n[1]).at(static_cast<size_t>(n[2]));
    case Op::chunk_piece:
      return aotgrad::chunk(a, n[0], n[1]).at(static_cast<size_t>(n[2]));
    case Op::unbind_piece:
      return aotgrad::unbind(a, n[0]).at(static_cast<size_t>(n[1]));
    case Op::div_scalar_:
      return a.div_(s.scalar);
    case Op::leaky_relu_:
      return aotgrad::leaky_relu_(a, 0.25);
    case Op::silu_:
      return aotgrad::silu_(a);
    case Op::hardtanh_:
      return aotgrad::hardtanh_(a, -0.5, 0.5);
  }
  return {};
}

std::string join_ints(const IntList& v, size_t from, size_t to) {
  std::string s;
  for (size_t i = from; i < to; ++i) s += (i > from ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string scalar_text(double x) {
  std::ostringstream os;
  os << x;
  std::string s = os.str();
  return s.find_first_of(".e") == std::string::npos ? s + ".0" : s;
}

// The expression of `s` applied to `a` (and `b`).
std::string expression(const Step& s, const std::string& a, const std::string& b) {
  const OpRow& r = row(s.op);
  const IntList& n = s.ints;
  std::string name = r.name;
  switch (r.form) {
    case Form::method:
      return a + "." + name + "()";
    case Form::method_tensor:
      return a + "." + name + "(" + b + ")";
    case Form::method_scalar:
      return a + "." + name + "(" + scalar_text(s.scalar) + ")";
    case Form::method_ints:
      return a + "." + name + "(" + join_ints(n, 0, n.size()) + ")";
    case Form::method_list:
      return a + "." + name + "({" + join_ints(n, 0, n.size()) + "})";
    case Form::reduce_dim:
      return a + "." + name + "({" + std::to_string(n[0]) + "}, " + (n[1] ? "true" : "false") + ")";
    case Form::as_strided:
      return a + ".as_strided({" + join_ints(n, 0, n.size() / 2) + "}, {" +
             join_ints(n, n.size() / 2, n.size()) + "})";
    case Form::cat:
      return "ag::cat({" + a + ", " + b + "}, " + std::to_string(n[0]) + ")";
    case Form::where:
      return "ag::where(" + a + ".gt(0.0), " + a + ", " + b + ")";
    case Form::free_inplace: {
      std::string extra = s.op == Op::leaky_relu_ ? ", 0.25"
                          : s.op == Op::hardtanh_ ? ", -0.5, 0.5"
                                                  : "";
      return "ag::" + name + "(" + a + (n.empty() ? "" : ", " + join_ints(n, 0, n.size())) + extra +
             ")";
    }
    case Form::piece:
      return "ag::" + name + "(" + a + ", " + join_ints(n, 0, n.size() - 1) + ")[" +
             std::to_string(n.back()) + "]";
  }
  return "?";
}

std::string value_name(const Program& p, int v) {
  return (static_cast<size_t>(v) < p.inputs.size() ? "a" : "v") + std::to_string(v);
}

}  // namespace

const OpRow& row(Op op) {
  return kOps[static_cast<size_t>(op)];
}

void apply_step(const Step& s, std::vector<Tensor>& values) {
  std::optional<NoGradGuard> no_grad;
  if (s.no_grad) no_grad.emplace();
  Tensor a = values.at(static_cast<size_t>(s.a));
  Tensor b = s.b >= 0 ? values.at(static_cast<size_t>(s.b)) : Tensor();
  Tensor result = apply_op(s, a, b);
  if (!row(s.op).in_place) values.push_back(result);
}

OracleSetup Program::make() const {
  std::vector<Tensor> made;
  OracleSetup setup;
  for (const Root& r : roots) {
    if (r.times_one_of >= 0) {
      made.push_back(made[static_cast<size_t>(r.times_one_of)] * 1.0);
      continue;
    }
    Tensor t = test_input(r.sizes, -1.0, 1.0, r.seed, false).to(dtype);
    if (r.requires_grad) t.requires_grad_();
    made.push_back(t);
    setup.leaves.push_back(t);
  }
  for (const InputSpec& in : inputs) {
    if (in.same_as >= 0) {
      setup.inputs.push_back(setup.inputs[static_cast<size_t>(in.same_as)]);
      continue;
    }
    Tensor t = made[static_cast<size_t>(in.root)];
    for (const Step& v : in.views) {
      std::optional<NoGradGuard> no_grad;
      if (v.no_grad) no_grad.emplace();
      t = apply_op(v, t, Tensor());
    }
    setup.inputs.push_back(t);
  }
  return setup;
}

std::vector<Tensor> Program::run_values(std::vector<Tensor> values) const {
  for (const Step& s : steps) apply_step(s, values);
  return values;
}

std::vector<Tensor> Program::run(std::vector<Tensor> in) const {
  std::vector<Tensor> values = run_values(std::move(in));
  std::vector<Tensor> outs;
  for (int o : outputs) outs.push_back(values.at(static_cast<size_t>(o)));
  return outs;
}

std::string Program::to_string() const {
  std::ostringstream os;
  os << "// program seed " << seed << " (draw " << attempt
     << (generator == 1 ? "" : ", generator " + std::to_string(generator)) << "), "
     << dtype_name(dtype) << "\n// setup\n";
  for (size_t i = 0; i < roots.size(); ++i) {
    const Root& r = roots[i];
    os << "Tensor r" << i << " = ";
    if (r.times_one_of >= 0)
      os << "r" << r.times_one_of << " * 1.0;  // non-leaf\n";
    else
      os << "leaf({" << join_ints(r.sizes, 0, r.sizes.size()) << "}, seed " << r.seed
         << (r.requires_grad ? ", requires_grad" : "") << ");\n";
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const InputSpec& in = inputs[i];
    std::string e = in.same_as >= 0 ? "a" + std::to_string(in.same_as) + ";  // the same tensor"
                                    : "r" + std::to_string(in.root);
    if (in.same_as < 0) {
      for (const Step& v : in.views)
        e = v.no_grad ? "[&] { NoGradGuard no_grad; return " + expression(v, e, "") + "; }()"
                      : expression(v, e, "");
      e += ";";
    }
    os << "Tensor a" << i << " = " << e << "\n";
  }
  os << "// body: fn(a0.." << (inputs.size() - 1) << ")\n";
  bool in_no_grad = false;
  size_t next_value = inputs.size();
  for (size_t k = 0; k < steps.size(); ++k) {
    const Step& s = steps[k];
    if (s.no_grad && !in_no_grad) {
      // Values made under no_grad are declared before the block, so later steps can use them.
      std::string made;
      size_t v = next_value;
      for (size_t j = k; j < steps.size() && steps[j].no_grad; ++j)
        if (!row(steps[j].op).in_place)
          made += (made.empty() ? "Tensor " : ", ") + value_name(*this, static_cast<int>(v++));
      if (!made.empty()) os << made << ";\n";
      os << "{\n  NoGradGuard no_grad;\n";
    } else if (!s.no_grad && in_no_grad) {
      os << "}\n";
    }
    in_no_grad = s.no_grad;
    os << (in_no_grad ? "  " : "");
    std::string e = expression(s, value_name(*this, s.a), s.b >= 0 ? value_name(*this, s.b) : "");
    if (row(s.op).in_place)
      os << e << ";\n";
    else
      os << (in_no_grad ? "" : "Tensor ") << value_name(*this, static_cast<int>(next_value++))
         << " = " << e << ";\n";
  }
  if (in_no_grad) os << "}\n";
  os << "return {";
  for (size_t o = 0; o < outputs.size(); ++o)
    os << (o ? ", " : "") << value_name(*this, outputs[o]);
  os << "};\n";
  return os.str();
}

}  // namespace aotgrad::testing::program_fuzz
