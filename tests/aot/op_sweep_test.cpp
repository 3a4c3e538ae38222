// compiled == eager over the op table: every aten row that is neither in-place, random nor
// effectful is called on the sample the gradgrad sweep uses (testing/op_samples.h), eagerly and
// through aot_function under each compiler (the interpreter and cpp), in f64 and again with its
// f64 tensors made f32; the outputs (dtype, sizes, values; integers and bools exactly) and, for
// rows with a VJP, the gradients of every input of a fixed weighted sum of the floating outputs
// must agree. The hand-written tests (compiled_eager_test.cpp and the scenario files) check
// chosen cases in depth; this one makes sure no row is missed, whatever is added to the table.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "aotgrad/aotgrad.h"
#include "ops/op.h"
#include "testing/gradcheck.h"
#include "testing/op_samples.h"

namespace ag = aotgrad;
using ag::Tensor;
namespace ops = ag::ops;

namespace {

using namespace ag::testing::op_samples;

struct Sweep {
  std::vector<std::string> checked, unsampled, failed;
};

// `sample`'s arguments with every f64 tensor converted to `dtype` (f64: unchanged), and every
// defined tensor among them in order (the compiled function's inputs: a captured tensor would be
// refused), with whether it is one of the sample's checked tensors (a leaf requiring grad).
struct Converted {
  ops::OpArgs args;
  std::vector<Tensor> tensors;
  std::vector<bool> checked;
};

Converted convert(const Sample& sample, ag::DType dtype) {
  Converted c{sample.args, {}, {}};
  size_t k = 0;
  auto visit = [&](Tensor& t) {
    if (!t.defined()) return;
    const bool is_checked = k < sample.inputs.size() && t.is_same(sample.inputs[k]);
    k += is_checked;
    if (t.dtype() == ag::DType::f64 && dtype != ag::DType::f64) t = t.detach().to(dtype);
    c.tensors.push_back(t);
    c.checked.push_back(is_checked);
  };
  for (ops::Arg& a : c.args) {
    if (auto* t = std::get_if<Tensor>(&a)) visit(*t);
    if (auto* l = std::get_if<ops::TensorList>(&a))
      for (Tensor& e : *l) visit(e);
  }
  return c;
}

// `args` with its defined tensors replaced by `in`, in order.
ops::OpArgs substitute(ops::OpArgs args, const std::vector<Tensor>& in) {
  size_t k = 0;
  for (ops::Arg& a : args) {
    if (auto* t = std::get_if<Tensor>(&a); t && t->defined()) *t = in.at(k++);
    if (auto* l = std::get_if<ops::TensorList>(&a))
      for (Tensor& e : *l)
        if (e.defined()) e = in.at(k++);
  }
  return args;
}

// One run of the row: fresh copies of its tensors (the checked ones leaves requiring grad when
// the row has a VJP), the row's outputs, and after a backward of sum(w_k * out_k) the gradients
// of the checked leaves.
struct Run {
  std::vector<Tensor> leaves, outs, grads;
};

template <typename Fn>
Run run_row(const Fn& fn, const Converted& c, bool grad) {
  Run r;
  for (size_t k = 0; k < c.tensors.size(); ++k) {
    Tensor leaf = c.tensors[k].detach().clone();
    if (grad && c.checked[k] && ag::is_floating(leaf.dtype())) leaf.requires_grad_();
    r.leaves.push_back(leaf);
  }
  r.outs = fn(r.leaves);
  if (!grad) return r;
  Tensor loss;
  for (size_t k = 0; k < r.outs.size(); ++k) {
    const Tensor& o = r.outs[k];
    if (!o.defined() || !o.requires_grad()) continue;
    Tensor w = ag::testing::test_input(o.sizes(), -1, 1, 200 + k, false).to(o.dtype());
    Tensor term = (o * w).sum();
    loss = loss.defined() ? loss + term : term;
  }
  if (loss.defined()) loss.backward();
  for (size_t k = 0; k < r.leaves.size(); ++k)
    if (c.checked[k]) r.grads.push_back(r.leaves[k].grad());
  return r;
}

std::string compare(const Run& c, const Run& e, double atol, double rtol) {
  std::ostringstream why;
  if (c.outs.size() != e.outs.size()) return "output count differs";
  auto same = [&](const Tensor& x, const Tensor& y, const std::string& what) {
    if (x.defined() != y.defined()) {
      why << what << ": defined " << x.defined() << " vs eager " << y.defined() << "; ";
      return;
    }
    if (!y.defined()) return;
    if (x.dtype() != y.dtype() || x.sizes() != y.sizes()) {
      why << what << ": " << ag::dtype_name(x.dtype()) << ag::shape_to_string(x.sizes())
          << " vs eager " << ag::dtype_name(y.dtype()) << ag::shape_to_string(y.sizes()) << "; ";
      return;
    }
    const bool exact = !ag::is_floating(y.dtype());
    if (auto ok = ag::testing::allclose(x, y, exact ? 0 : atol, exact ? 0 : rtol); !ok)
      why << what << ": " << ok.message() << "; ";
  };
  for (size_t k = 0; k < e.outs.size(); ++k) {
    same(c.outs[k], e.outs[k], "output " + std::to_string(k));
    if (c.outs[k].defined() && e.outs[k].defined() &&
        c.outs[k].requires_grad() != e.outs[k].requires_grad())
      why << "output " << k << ": requires_grad differs; ";
  }
  for (size_t k = 0; k < e.grads.size(); ++k)
    same(c.grads[k], e.grads[k], "grad of input " + std::to_string(k));
  return why.str();
}

void sweep_row(const ops::OpDef& op, const Sample& sample, Sweep& s) {
  const std::string name(op.name);
  const bool grad = op.vjp != nullptr;
  for (ag::DType dtype : {ag::DType::f64, ag::DType::f32}) {
    const Converted converted = convert(sample, dtype);
    auto fn = [&](const std::vector<Tensor>& in) {
      return ops::dispatch(op, substitute(converted.args, in));
    };
    const std::string where = name + " (" + std::string(ag::dtype_name(dtype)) + ")";
    Run e;
    try {
      e = run_row(fn, converted, grad);
    } catch (const std::exception&) {
      if (dtype == ag::DType::f64) s.unsampled.push_back(where + ": eager rejects the sample");
      continue;  // the row takes no f32 here (a dtype argument names f64): nothing to compare
    }
    const double atol = dtype == ag::DType::f64 ? 1e-10 : 2e-5;
    const double rtol = dtype == ag::DType::f64 ? 1e-9 : 1e-4;
    for (const char* compiler : {"interpreter", "cpp"}) {
      ag::AotConfig config;
      config.fw_compiler = compiler;
      config.name = "sweep";
      try {
        auto compiled = ag::aot_function(fn, config);
        Run c = run_row(compiled, converted, grad);
        if (std::string why = compare(c, e, atol, rtol); !why.empty())
          s.failed.push_back(where + " under " + compiler + ": " + why);
        else
          s.checked.push_back(where + " under " + compiler);
      } catch (const std::exception& ex) {
        s.failed.push_back(where + " under " + compiler + " threw: " + ex.what());
      }
    }
  }
}

}  // namespace

// Backward rows whose statistics arguments must come from their forward row.
void add_statistics_samples(Samples& m) {
  auto row = [](const char* name) { return &ops::lookup(name); };
  m["aten.native_layer_norm_backward.default"] = [row] {
    Tensor g = input({2, 3}, 1), x = input({2, 3}, 2), w = input({3}, 3), b = input({3}, 4);
    std::vector<Tensor> f =
        ops::dispatch(*row("aten.native_layer_norm.default"),
                      {x.detach(), ag::IntList{3}, w.detach(), b.detach(), 1e-5});
    return Sample{{g, x, ag::IntList{3}, f[1], f[2], w, b, ag::IntList{1, 1, 1}}, {g, x, w, b}};
  };
  m["aten.native_batch_norm_backward.default"] = [row] {
    Tensor g = input({3, 2}, 1), x = input({3, 2}, 2), w = input({2}, 3);
    std::vector<Tensor> f = ops::dispatch(
        *row("aten._native_batch_norm_legit_functional.default"),
        {x.detach(), w.detach(), Tensor(), constant({2}, 4), constant({2}, 5), true, 0.1, 1e-5});
    return Sample{{g, x, w, Tensor(), Tensor(), f[1], f[2], true, 1e-5, ag::IntList{1, 1, 0}},
                  {g, x, w}};
  };
}

TEST(OpSweep, EveryRowCompiledUnderEachCompilerMatchesEager) {
  Sweep s;
  auto hand = hand_written();
  add_statistics_samples(hand);
  int rows = 0;
  for (const ops::OpDef* op : ops::all_ops()) {
    if (op->is_inplace() || op->name.rfind("aten.", 0) != 0 ||
        op->recompute == ops::Recompute::random || op->recompute == ops::Recompute::effectful ||
        op->name.find("empty") != std::string_view::npos)
      continue;
    std::optional<Sample> sample;
    if (auto it = hand.find(std::string(op->name)); it != hand.end()) sample = it->second();
    for (const ag::IntList& shape :
         {ag::IntList{2, 3}, ag::IntList{2, 2}, ag::IntList{2, 2, 2}, ag::IntList{3}})
      if (!sample) sample = generic_sample(*op, shape, /*floating_result=*/false);
    if (!sample) {
      s.unsampled.push_back(std::string(op->schema));
      continue;
    }
    ++rows;
    sweep_row(*op, *sample, s);
  }
  EXPECT_TRUE(s.failed.empty()) << s.failed.size() << " differences:" << join(s.failed);
  EXPECT_GE(rows, 130);
  std::cout << "op sweep: " << rows << " rows, " << s.checked.size()
            << " checks passed; no sample (" << s.unsampled.size() << "):" << join(s.unsampled)
            << "\n";
}
