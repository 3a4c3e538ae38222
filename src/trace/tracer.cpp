#include "trace/tracer.h"

#include <stdexcept>

#include "aotgrad/autograd.h"

namespace aotgrad::trace {
namespace {

Tensor fake_like(const ops::TensorMeta& m) {
  auto impl = std::make_shared<TensorImpl>();
  impl->dtype = m.dtype;
  impl->sizes = m.sizes;
  impl->strides = m.strides;
  impl->storage = std::make_shared<Storage>(numel_of(m.sizes) * itemsize(m.dtype), /*fake=*/true);
  return Tensor(std::move(impl));
}

ops::TensorMeta meta_of(const Tensor& t) {
  return ops::TensorMeta{t.dtype(), t.sizes(), t.strides(), 0};
}

}  // namespace

void Tracer::set_requires_grad(graph::ValueId v, bool r) {
  if (requires_grad_.size() <= v.index) requires_grad_.resize(v.index + 1, false);
  requires_grad_[v.index] = r;
}

bool Tracer::requires_grad(graph::ValueId v) const {
  return v.index < requires_grad_.size() && requires_grad_[v.index];
}

Tensor Tracer::add_input(const Tensor& example, std::string_view name_hint, std::string desc) {
  ops::TensorMeta m = meta_of(example);
  graph::ValueId v = graph_.add_input(name_hint, m, std::move(desc));
  Tensor fake = bind(v, example.requires_grad());
  input_storages_.push_back(fake.storage());
  return fake;
}

Tensor Tracer::bind(graph::ValueId v, bool requires_grad) {
  Tensor fake = fake_like(graph_.value(v).meta);
  fake.impl()->trace = TraceSlot{this, v.index};
  if (requires_grad) fake.impl()->autograd_meta().requires_grad = true;
  set_requires_grad(v, requires_grad);
  return fake;
}

graph::ValueId Tracer::value_of(const Tensor& t, const std::string& what) const {
  if (!t.defined()) throw std::invalid_argument(what + " is an undefined Tensor");
  if (t.impl()->trace.owner != this)
    throw std::invalid_argument(
        what + " is a tensor the traced function did not receive as an input (a captured or "
               "newly built real tensor). Pass it to the function as an argument, or build it "
               "inside the function with the factory ops (zeros, full, arange, ...).");
  return graph::ValueId{t.impl()->trace.value};
}

graph::NodeArg Tracer::to_node_arg(const ops::OpDef& op, const ops::Arg& a, size_t index) const {
  auto what = [&](size_t k) {
    return std::string(op.name) + " argument " + std::to_string(index) +
           (k == SIZE_MAX ? "" : " element " + std::to_string(k));
  };
  return std::visit(
      [&](const auto& x) -> graph::NodeArg {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, Tensor>) {
          if (!x.defined()) return std::monostate{};
          return value_of(x, what(SIZE_MAX));
        } else if constexpr (std::is_same_v<T, ops::TensorList>) {
          graph::ValueList l;
          for (size_t k = 0; k < x.size(); ++k) l.push_back(value_of(x[k], what(k)));
          return l;
        } else {
          return x;
        }
      },
      a);
}

std::vector<Tensor> Tracer::call(const ops::OpDef& op, ops::OpArgs& args) {
  if (op.is_inplace()) return record_inplace(op, args);
  return record(op, args);
}

std::vector<Tensor> Tracer::record(const ops::OpDef& op, ops::OpArgs& args) {
  std::vector<graph::NodeArg> node_args;
  bool any_requires_grad = false;
  for (size_t i = 0; i < args.size(); ++i) {
    node_args.push_back(to_node_arg(op, args[i], i));
    for (graph::ValueId v : graph::arg_values(node_args.back()))
      any_requires_grad = any_requires_grad || requires_grad(v);
  }
  std::vector<ops::TensorMeta> metas;
  try {
    metas = op.meta(args);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(op.name) + ": " + e.what());
  }
  std::vector<graph::ValueId> outs = graph_.add_node(op, std::move(node_args), metas);
  bool track = any_requires_grad && op.vjp && autograd::grad_mode_enabled();
  std::vector<Tensor> results;
  for (size_t i = 0; i < outs.size(); ++i) {
    bool r = track && is_floating(metas[i].dtype);
    Tensor out;
    if (op.is_view() && i == 0) {
      const Tensor& base = ops::tensor_arg(args, op.view_of_arg());
      out = make_view(base, metas[i].sizes, metas[i].strides, metas[i].storage_offset);
      out.impl()->trace = TraceSlot{this, outs[i].index};
      set_requires_grad(outs[i], r);
      if (r) out.impl()->autograd_meta().requires_grad = true;
    } else {
      out = bind(outs[i], r);
    }
    results.push_back(out);
  }
  return results;
}

std::vector<Tensor> Tracer::record_inplace(const ops::OpDef& op, ops::OpArgs& args) {
  Tensor self = ops::tensor_arg(args, op.mutated_arg());
  graph::ValueId old = value_of(self, std::string(op.name) + " argument 'self'");
  for (size_t i = 0; i < input_storages_.size(); ++i)
    if (self.storage() == input_storages_[i])
      throw UnsupportedError(
          std::string(op.name) + " mutates input " + std::to_string(i) +
          " of the compiled function (or a view of it). Input mutation is not supported by "
          "aot_function yet: clone() the input inside the function, or mutate it outside.");
  if (self.is_view() || self.storage().use_count() > 1)
    throw UnsupportedError(std::string(op.name) +
                           " mutates a tensor that shares storage with another tensor (a view "
                           "or its base) inside the compiled function; mutation through "
                           "aliases is not supported by aot_function yet. Use the out-of-place "
                           "op instead.");
  if (!autograd::grad_mode_enabled() && requires_grad(old))
    throw UnsupportedError(std::string(op.name) +
                           " under no_grad mutates a tensor that requires grad inside the "
                           "compiled function; hiding a mutation from autograd is not supported "
                           "by aot_function yet.");
  if (op.functional_variant.empty())
    throw std::logic_error(std::string(op.name) + " has no functional variant in the op table");
  const ops::OpDef& functional = ops::lookup(op.functional_variant);
  ops::OpArgs fargs = args;
  ops::normalize(functional, fargs);
  Tensor result = record(functional, fargs).at(0);
  if (result.dtype() != self.dtype() || result.sizes() != self.sizes())
    throw std::invalid_argument(std::string(op.name) + ": result of dtype " +
                                std::string(dtype_name(result.dtype())) + " and shape " +
                                shape_to_string(result.sizes()) +
                                " cannot be written into self of dtype " +
                                std::string(dtype_name(self.dtype())) + " and shape " +
                                shape_to_string(self.sizes()));
  // `self` now stands for the new value; no other tensor aliases it (checked above).
  graph::ValueId fresh{result.impl()->trace.value};
  self.impl()->trace.value = fresh.index;
  bool r = requires_grad(fresh) || requires_grad(old);
  set_requires_grad(fresh, r);
  if (r) self.impl()->autograd_meta().requires_grad = true;
  return {self};
}

}  // namespace aotgrad::trace
