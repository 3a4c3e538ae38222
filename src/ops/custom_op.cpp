// Custom ops (aotgrad/custom_op.h): turns an OpRegistration into op-table rows.
//
// Reading guide: register_op checks the schema (split_name, check_schema), builds a CustomOp
// (owned strings, the row, and for a mutating op its functional row), and hands the rows to the
// registry (ops/custom_op_table.h). The table's function pointers carry no state, so each custom
// op takes one of kSlots slots, and the row points at the trampolines instantiated for that slot
// (Trampolines<K>), which read the user's functions from slots()[K].
//
// Thread-safety: a slot is filled under the registration mutex before its rows are published
// through the registry's lock, and never changes after; trampolines read it without a lock.
#include "aotgrad/custom_op.h"

#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>

#include "aotgrad/autograd.h"
#include "kernels/copy.h"
#include "ops/custom_op_table.h"
#include "ops/op.h"
#include "ops/row_helpers.h"

namespace aotgrad {

static_assert(std::is_same_v<OpArg, ops::Arg>, "OpArg must stay the op table's argument type");
static_assert(std::is_same_v<OpArgs, ops::OpArgs>);

namespace {

using ops::OpDef;
using ops::TensorMeta;

constexpr size_t kSlots = 256;

struct Slot {
  CustomMetaFn meta = nullptr;
  CustomKernelFn kernel = nullptr;
  CustomVjpFn vjp = nullptr;
  const OpDef* row = nullptr;
  int written = -1;                  // argument index the schema marks (a!), or -1
  std::atomic<bool> checked{false};  // the first eager call compared the arguments' bytes
};

std::array<Slot, kSlots>& slots() {
  static std::array<Slot, kSlots> s;
  return s;
}

// A custom op's rows and the strings they view.
struct CustomOp {
  std::string name, schema_text, functional_name, functional_schema;
  OpDef row;
  OpDef functional;
};

std::mutex& registration_mutex() {
  static std::mutex m;
  return m;
}
std::deque<std::unique_ptr<CustomOp>>& custom_ops() {
  static std::deque<std::unique_ptr<CustomOp>> ops;
  return ops;
}

std::string quoted(std::string_view s) {
  return "'" + std::string(s) + "'";
}

// A hash of `t`'s elements (its logical contents, whatever its strides).
std::string contents(const Tensor& t) {
  Tensor c = kernels::contiguous_copy(t, t.dtype());
  const auto* p = static_cast<const char*>(c.storage()->data()) +
                  c.storage_offset() * static_cast<int64_t>(itemsize(c.dtype()));
  return std::string(p, static_cast<size_t>(c.numel()) * itemsize(c.dtype()));
}

// Snapshots of the tensors (Tensor arguments and Tensor[] elements) the schema does not mark as
// written; `which` names each for the error.
struct Snapshot {
  std::vector<std::pair<Tensor, std::string>> tensors;
  std::vector<std::string> bytes;
};

Snapshot snapshot_unwritten(const OpDef& op, const OpArgs& args, int written) {
  Snapshot s;
  const ops::Schema& schema = op.parsed_schema();
  for (size_t i = 0; i < args.size(); ++i) {
    if (static_cast<int>(i) == written) continue;
    auto add = [&](const Tensor& t, std::string what) {
      if (!t.defined() || t.is_fake()) return;
      s.tensors.emplace_back(t, std::move(what));
      s.bytes.push_back(contents(t));
    };
    if (auto* t = std::get_if<Tensor>(&args[i])) add(*t, quoted(schema.args[i].name));
    if (auto* l = std::get_if<std::vector<Tensor>>(&args[i]))
      for (size_t e = 0; e < l->size(); ++e)
        add((*l)[e], quoted(schema.args[i].name) + " element " + std::to_string(e));
  }
  return s;
}

void check_unchanged(const OpDef& op, const Snapshot& s) {
  for (size_t i = 0; i < s.tensors.size(); ++i)
    if (contents(s.tensors[i].first) != s.bytes[i])
      throw std::logic_error(
          std::string(op.name) + ": the kernel wrote argument " + s.tensors[i].second +
          ", which the schema '" + std::string(op.schema) +
          "' does not mark as written; declare it Tensor(a!) or write to a clone");
}

std::vector<TensorMeta> metas_of(const OpDef& op, const std::vector<TensorSpec>& specs) {
  std::vector<TensorMeta> out;
  for (const TensorSpec& s : specs) out.push_back(TensorMeta::contiguous(s.sizes, s.dtype));
  const ops::Schema& schema = op.parsed_schema();
  bool list = !schema.returns.empty() && schema.returns[0].type == ops::ArgType::tensor_list;
  if (!list && out.size() != schema.returns.size())
    ops::fail(op.name, "the meta function returned " + std::to_string(out.size()) +
                           " results; the schema declares " +
                           std::to_string(schema.returns.size()));
  return out;
}

template <size_t K>
struct Trampolines {
  static std::vector<TensorMeta> meta(const OpArgs& args) {
    const Slot& s = slots()[K];
    if (s.written >= 0) {
      // An in-place row's result is the written argument itself; the user's meta still runs
      // for its checks.
      s.meta(args);
      const Tensor& self = ops::tensor_arg(args, static_cast<size_t>(s.written));
      if (s.row->parsed_schema().returns.empty()) return {};
      return {{self.dtype(), self.sizes(), self.strides(), self.storage_offset()}};
    }
    return metas_of(*s.row, s.meta(args));
  }
  // Kernels run below autograd (a kernel built from public ops records no nodes).
  static std::vector<Tensor> kernel(const OpArgs& args) {
    Slot& s = slots()[K];
    NoGradGuard no_grad;
    if (s.checked.load(std::memory_order_relaxed)) return s.kernel(args);
    // Set only once a call passed: threads racing here all check, which is harmless.
    Snapshot before = snapshot_unwritten(*s.row, args, s.written);
    std::vector<Tensor> out = s.kernel(args);
    check_unchanged(*s.row, before);
    s.checked.store(true, std::memory_order_relaxed);
    return out;
  }
  static std::vector<Tensor> vjp(const ops::VjpContext& c) {
    const Slot& s = slots()[K];
    if (!s.vjp) {
      std::string which;
      const ops::Schema& schema = s.row->parsed_schema();
      for (size_t i = 0, flat = 0; i < c.args.size(); ++i) {
        size_t n = std::holds_alternative<Tensor>(c.args[i]) ? 1
                   : std::holds_alternative<std::vector<Tensor>>(c.args[i])
                       ? std::get<std::vector<Tensor>>(c.args[i]).size()
                       : 0;
        for (size_t e = 0; e < n; ++e, ++flat)
          if (which.empty() && c.needs(flat)) which = quoted(schema.args[i].name);
      }
      throw std::runtime_error(std::string(c.op.name) +
                               " has no VJP, but a gradient is needed for its argument " + which +
                               "; register one with OpRegistration::vjp (or detach the input)");
    }
    return s.vjp(CustomVjpContext{c.args, c.outputs, c.grads, c.needs_grad});
  }
  // The functional row of a mutating op: the kernel on a clone of the written argument.
  static std::vector<TensorMeta> functional_meta(const OpArgs& args) {
    const Slot& s = slots()[K];
    s.meta(args);
    const Tensor& self = ops::tensor_arg(args, static_cast<size_t>(s.written));
    return {TensorMeta::contiguous(self.sizes(), self.dtype())};
  }
  static std::vector<Tensor> functional_kernel(const OpArgs& args) {
    const Slot& s = slots()[K];
    NoGradGuard no_grad;
    OpArgs copy = args;
    Tensor updated = kernels::contiguous_copy(ops::tensor_arg(args, size_t(s.written)),
                                              ops::tensor_arg(args, size_t(s.written)).dtype());
    copy[static_cast<size_t>(s.written)] = updated;
    s.kernel(copy);
    return {updated};
  }
};

struct TrampolineSet {
  ops::MetaFn meta;
  ops::KernelFn kernel;
  ops::VjpFn vjp;
  ops::MetaFn functional_meta;
  ops::KernelFn functional_kernel;
};

template <size_t... K>
constexpr std::array<TrampolineSet, sizeof...(K)> make_trampolines(std::index_sequence<K...>) {
  return {{TrampolineSet{&Trampolines<K>::meta, &Trampolines<K>::kernel, &Trampolines<K>::vjp,
                         &Trampolines<K>::functional_meta, &Trampolines<K>::functional_kernel}...}};
}

constexpr auto kTrampolines = make_trampolines(std::make_index_sequence<kSlots>{});

bool is_identifier(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

struct QualifiedName {
  std::string ns, rest;  // "mylib", "scale_.out"
};

// "mylib::scale_.out" -> {mylib, scale_.out}; `what` names the text for the error.
QualifiedName split_name(std::string_view text, const std::string& what) {
  size_t colons = text.find("::");
  if (colons == std::string_view::npos || !is_identifier(text.substr(0, colons)))
    throw std::invalid_argument(what + ": expected 'namespace::name(...) -> ...', as " +
                                "\"mylib::scale(Tensor x, float s) -> Tensor\"");
  QualifiedName q{std::string(text.substr(0, colons)), std::string(text.substr(colons + 2))};
  if (q.ns == "aten" || q.ns == "aotgrad" || q.ns == "prim" || q.ns == "prims")
    throw std::invalid_argument(what + ": namespace '" + q.ns +
                                "' is reserved for built-in ops; use your library's own");
  return q;
}

std::string table_name(const std::string& ns, const ops::Schema& s) {
  return ns + "." + s.name + "." + s.overload;
}

// The index of the argument written in place (-1 for none). Custom ops may write one argument and
// return nothing or it; they may not return views.
int check_schema(const ops::Schema& s, const std::string& what) {
  int written = -1;
  for (size_t i = 0; i < s.args.size(); ++i) {
    const ops::ArgSchema& a = s.args[i];
    if (a.alias_set.empty()) continue;
    if (!a.is_write || a.type != ops::ArgType::tensor)
      throw std::invalid_argument(what + ": argument '" + a.name +
                                  "' has an alias annotation without '!'; custom ops may write a "
                                  "Tensor argument (Tensor(a!)) but not return views of one");
    if (written >= 0)
      throw std::invalid_argument(what + ": custom ops may write at most one argument ('" +
                                  s.args[static_cast<size_t>(written)].name + "' and '" + a.name +
                                  "' are marked (a!))");
    written = static_cast<int>(i);
  }
  for (const ops::ArgSchema& r : s.returns) {
    if (r.type != ops::ArgType::tensor && r.type != ops::ArgType::tensor_list)
      throw std::invalid_argument(what + ": custom ops return Tensor or Tensor[] results");
    bool aliases_written =
        written >= 0 && r.alias_set == s.args[static_cast<size_t>(written)].alias_set;
    if (!r.alias_set.empty() && (!aliases_written || s.returns.size() != 1))
      throw std::invalid_argument(what +
                                  ": a custom op's result may alias only its written "
                                  "argument, as its single result (Tensor(a!))");
    if (written >= 0 && !aliases_written)
      throw std::invalid_argument(what + ": an op that writes '" +
                                  s.args[static_cast<size_t>(written)].name +
                                  "' returns nothing or it (-> Tensor(a!)), as in-place ops do");
  }
  return written;
}

// `text` with every `(x!)` annotation dropped and the results replaced by `-> Tensor`: the
// schema of a mutating op's functional variant, under `name`.
std::string functional_schema_text(std::string_view text, const std::string& name) {
  size_t open = text.find('('), arrow = text.rfind("->");
  std::string args(text.substr(open, arrow - open)), out = name;
  for (size_t i = 0; i < args.size(); ++i) {
    size_t close = args.find(')', i);
    if (args[i] == '(' && i > 0 && std::isalnum(static_cast<unsigned char>(args[i - 1])) &&
        close != std::string::npos && close > i && args[close - 1] == '!') {
      i = close;
      continue;
    }
    out += args[i];
  }
  return out + "-> Tensor";
}

ops::SaveMask save_everything_but(int written) {
  ops::SaveMask m{~0u, ~0u};
  if (written >= 0) m.inputs &= ~ops::bit(static_cast<unsigned>(written));
  return m;
}

OpDef::Derived derived_of(const ops::Schema& s, int written) {
  OpDef::Derived d;
  d.schema = s;
  d.mutated_arg = written;
  d.view_of_arg = s.returns.empty() ? -1 : written;  // an in-place row returns what it wrote
  return d;
}

const OpDef& resolve(std::string_view name) {
  if (const OpDef* op = ops::find(name)) return *op;
  std::string text(name);
  if (size_t colons = text.find("::"); colons != std::string::npos) {
    text.replace(colons, 2, ".");
    if (text.find('.', colons + 1) == std::string::npos) text += ".default";
    if (const OpDef* op = ops::find(text)) return *op;
  }
  throw std::invalid_argument("unknown op '" + std::string(name) +
                              "': register it with aotgrad::register_op first (or load its "
                              "library with --load-ops)");
}

}  // namespace

std::string register_op(const OpRegistration& reg) {
  std::string what = "register_op(\"" + reg.schema.substr(0, 200) + "\")";
  QualifiedName q = split_name(reg.schema, what);
  ops::Schema schema;
  try {
    schema = ops::parse_schema(q.rest);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(what + ": the schema does not parse: " + e.what());
  }
  int written = check_schema(schema, what);
  if (!reg.meta)
    throw std::invalid_argument(what +
                                ": no meta function; tracing needs one to know the "
                                "results' dtype and sizes without running the kernel");
  if (!reg.kernel) throw std::invalid_argument(what + ": no kernel");

  std::lock_guard lock(registration_mutex());
  auto& all = custom_ops();
  if (all.size() == kSlots)
    throw std::invalid_argument(what + ": at most " + std::to_string(kSlots) +
                                " custom ops can be registered");
  auto op = std::make_unique<CustomOp>();
  op->name = table_name(q.ns, schema);
  if (ops::find(op->name))
    throw std::invalid_argument(what + ": op '" + op->name + "' is registered already");
  op->schema_text = q.rest;
  const size_t k = all.size();
  const TrampolineSet& t = kTrampolines[k];
  Slot& slot = slots()[k];
  slot.meta = reg.meta;
  slot.kernel = reg.kernel;
  slot.vjp = reg.vjp;
  slot.written = written;
  slot.row = &op->row;

  ops::Recompute recompute = reg.recompute == CustomRecompute::cheap ? ops::Recompute::pointwise
                                                                     : ops::Recompute::effectful;
  if (reg.effectful) recompute = ops::Recompute::effectful;
  op->row = OpDef{.name = op->name,
                  .schema = op->schema_text,
                  .meta = t.meta,
                  .kernel = t.kernel,
                  .vjp = t.vjp,
                  .saves = save_everything_but(written),
                  .recompute = written >= 0 ? ops::Recompute::effectful : recompute};
  op->row.effectful = reg.effectful;
  if (written >= 0) {
    std::string overload =
        schema.overload == "default" ? "functional" : schema.overload + "_functional";
    op->functional_name = q.ns + "." + schema.name + "." + overload;
    op->functional_schema = functional_schema_text(q.rest, schema.name + "." + overload);
    op->row.functional_variant = op->functional_name;
    op->functional = OpDef{.name = op->functional_name,
                           .schema = op->functional_schema,
                           .meta = t.functional_meta,
                           .kernel = t.functional_kernel,
                           .vjp = t.vjp,
                           .saves = save_everything_but(written),
                           .recompute = recompute};
    op->functional.effectful = reg.effectful;
    ops::add_runtime_row(op->functional, derived_of(ops::parse_schema(op->functional_schema), -1));
  }
  ops::add_runtime_row(op->row, derived_of(schema, written));
  std::string name = op->name;
  all.push_back(std::move(op));
  return name;
}

bool op_registered(std::string_view name) {
  try {
    resolve(name);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

std::vector<Tensor> call_op(std::string_view name, OpArgs args) {
  return ops::dispatch(resolve(name), std::move(args));
}

void opcheck(std::string_view name, const OpArgs& args) {
  const OpDef& op = resolve(name);
  OpArgs copy = args;
  ops::normalize(op, copy);
  NoGradGuard no_grad;
  for (OpArg& a : copy) {
    if (auto* t = std::get_if<Tensor>(&a); t && t->defined())
      *t = kernels::contiguous_copy(*t, t->dtype());
    if (auto* l = std::get_if<std::vector<Tensor>>(&a))
      for (Tensor& e : *l) e = kernels::contiguous_copy(e, e.dtype());
  }
  std::vector<TensorMeta> metas = op.meta(copy);
  Snapshot before = snapshot_unwritten(op, copy, op.mutated_arg());
  IntList written_sizes;
  if (op.mutated_arg() >= 0)
    written_sizes = ops::tensor_arg(copy, size_t(op.mutated_arg())).sizes();
  std::vector<Tensor> out = op.kernel(copy);
  check_unchanged(op, before);
  if (op.mutated_arg() >= 0 &&
      ops::tensor_arg(copy, size_t(op.mutated_arg())).sizes() != written_sizes)
    throw std::logic_error(std::string(op.name) + ": the kernel resized its written argument");
  if (out.size() != metas.size())
    throw std::logic_error(std::string(op.name) + ": the kernel returned " +
                           std::to_string(out.size()) + " results, the meta function " +
                           std::to_string(metas.size()));
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i].dtype() != metas[i].dtype || out[i].sizes() != metas[i].sizes)
      throw std::logic_error(std::string(op.name) + ": result " + std::to_string(i) + " is " +
                             std::string(dtype_name(out[i].dtype())) +
                             shape_to_string(out[i].sizes()) + " but the meta function says " +
                             std::string(dtype_name(metas[i].dtype)) +
                             shape_to_string(metas[i].sizes));
}

}  // namespace aotgrad
