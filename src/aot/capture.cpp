#include "aot/capture.h"

#include <stdexcept>

#include "aotgrad/autograd.h"
#include "trace/tracer.h"

namespace aotgrad::aot {
namespace {

std::string describe_inputs(const std::vector<Tensor>& inputs) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i)
    s += (i ? ", " : "") + std::string(dtype_name(inputs[i].dtype())) +
         shape_to_string(inputs[i].sizes());
  return s;
}

// Outputs that alias an input, or each other, would need view replay (not supported yet).
void check_output_aliasing(const std::string& fn_name, const std::vector<Tensor>& fake_inputs,
                           const std::vector<Tensor>& outs) {
  for (size_t o = 0; o < outs.size(); ++o) {
    for (size_t i = 0; i < fake_inputs.size(); ++i)
      if (outs[o].storage() == fake_inputs[i].storage())
        throw trace::UnsupportedError(
            fn_name + ": output " + std::to_string(o) + (outs[o].is_same(fake_inputs[i]) ? " is" : " is a view of") +
            " input " + std::to_string(i) +
            ". Returning an input or a view of an input is not supported by aot_function yet: "
            "return a clone() instead.");
    for (size_t p = 0; p < o; ++p)
      if (outs[o].storage() == outs[p].storage() && !outs[o].is_same(outs[p]))
        throw trace::UnsupportedError(
            fn_name + ": outputs " + std::to_string(p) + " and " + std::to_string(o) +
            " share storage (one is a view of the other or of a common base). Outputs that "
            "alias each other are not supported by aot_function yet: clone() one of them.");
  }
}

}  // namespace

CapturedForward capture_forward(const FlatFn& fn, const std::vector<Tensor>& inputs,
                                const std::string& fn_name) {
  CapturedForward c;
  trace::Tracer tracer(c.graph);
  std::vector<Tensor> fakes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined())
      throw std::invalid_argument(fn_name + ": input " + std::to_string(i) + " is an undefined Tensor");
    fakes.push_back(tracer.add_input(inputs[i], "arg" + std::to_string(i),
                                     "input(" + std::to_string(i) + ")"));
  }
  std::vector<Tensor> outs;
  try {
    ops::InterpreterGuard guard(tracer);
    outs = fn(fakes);
  } catch (const trace::UnsupportedError&) {
    throw;
  } catch (const std::exception& e) {
    throw std::invalid_argument(fn_name + ": tracing failed for inputs (" + describe_inputs(inputs) +
                                "): " + e.what());
  }
  check_output_aliasing(fn_name, fakes, outs);
  for (size_t o = 0; o < outs.size(); ++o) {
    graph::ValueId v = tracer.value_of(outs[o], fn_name + ": output " + std::to_string(o));
    c.graph.add_output(v, "output(" + std::to_string(o) + ")");
    c.output_requires_grad.push_back(tracer.requires_grad(v));
  }
  for (uint32_t v = 0; v < c.graph.values().size(); ++v)
    c.value_requires_grad.push_back(tracer.requires_grad(graph::ValueId{v}));
  return c;
}

}  // namespace aotgrad::aot
