// The op table: concatenates the families and derives each row's schema facts once, and holds
// the rows registered at run time (custom ops, ops/custom_op_table.h).
//
// Thread-safety: the built-in rows are built once (a function-local static) and never change, so
// their lookups take no lock. Run-time rows live in a second map behind a shared_mutex; a lookup
// that misses the built-in rows takes it only once some op was registered.
#include <atomic>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "ops/custom_op_table.h"
#include "ops/families.h"
#include "ops/op.h"

namespace aotgrad::ops {
namespace {

OpDef::Derived derive(const OpDef& op) {
  OpDef::Derived d;
  d.schema = parse_schema(op.schema);
  // ATen ops live in "aten."; the few ops aotgrad adds for its own passes live in "aotgrad.".
  std::string suffix = d.schema.name + "." + d.schema.overload;
  std::string expected = op.name.rfind("aotgrad.", 0) == 0 ? "aotgrad." + suffix : "aten." + suffix;
  if (expected != op.name)
    throw std::logic_error("op row '" + std::string(op.name) + "' has schema named " + expected);
  for (size_t i = 0; i < d.schema.args.size(); ++i) {
    const ArgSchema& a = d.schema.args[i];
    if (a.is_write && d.mutated_arg < 0) d.mutated_arg = static_cast<int>(i);
    if (!a.alias_set.empty() && d.view_of_arg < 0) {
      for (const ArgSchema& r : d.schema.returns)
        if (r.alias_set == a.alias_set) d.view_of_arg = static_cast<int>(i);
    }
  }
  if (!op.meta || !op.kernel)
    throw std::logic_error("op row '" + std::string(op.name) + "' lacks a meta or kernel function");
  d.omitted = omitted_args(d.schema);
  return d;
}

struct Registry {
  std::vector<const OpDef*> rows;
  std::vector<std::unique_ptr<OpDef::Derived>> derived;
  std::unordered_map<std::string_view, const OpDef*> by_name;

  Registry() {
    for (auto family : {pointwise_ops,
                        compare_ops,
                        reduction_ops,
                        linalg_ops,
                        nn_ops,
                        view_ops,
                        inplace_ops,
                        inplace_view_ops,
                        factory_ops,
                        functional_ops,
                        normalization_ops,
                        math_ops,
                        joining_ops,
                        indexing_ops,
                        conv_ops,
                        pooling_ops,
                        activation_ops,
                        transform_ops,
                        random_ops,
                        effect_ops,
                        advanced_indexing_ops,
                        upsample_ops,
                        nn_extra_ops,
                        reduce_extra_ops,
                        attention_ops}) {
      for (const OpDef& op : family()) {
        if (by_name.count(op.name))
          throw std::logic_error("op '" + std::string(op.name) + "' is registered twice");
        derived.push_back(std::make_unique<OpDef::Derived>(derive(op)));
        op.derived = derived.back().get();
        rows.push_back(&op);
        by_name.emplace(op.name, &op);
      }
    }
  }
};

const Registry& registry() {
  static const Registry r;
  return r;
}

struct RuntimeRows {
  std::shared_mutex mutex;
  std::vector<std::unique_ptr<OpDef::Derived>> derived;
  std::unordered_map<std::string_view, const OpDef*> by_name;  // names owned by the rows' owner
  std::atomic<bool> any{false};
};

RuntimeRows& runtime_rows() {
  static RuntimeRows r;
  return r;
}

}  // namespace

void add_runtime_row(const OpDef& op, OpDef::Derived derived) {
  const Registry& fixed = registry();
  RuntimeRows& rt = runtime_rows();
  derived.omitted = omitted_args(derived.schema);
  std::unique_lock lock(rt.mutex);
  if (fixed.by_name.count(op.name) || rt.by_name.count(op.name))
    throw std::invalid_argument("op '" + std::string(op.name) + "' is registered already");
  rt.derived.push_back(std::make_unique<OpDef::Derived>(std::move(derived)));
  op.derived = rt.derived.back().get();
  rt.by_name.emplace(op.name, &op);
  rt.any.store(true, std::memory_order_release);
}

const OpDef* find(std::string_view name) {
  const auto& r = registry();
  auto it = r.by_name.find(name);
  if (it != r.by_name.end()) return it->second;
  RuntimeRows& rt = runtime_rows();
  if (!rt.any.load(std::memory_order_acquire)) return nullptr;
  std::shared_lock lock(rt.mutex);
  auto rit = rt.by_name.find(name);
  return rit == rt.by_name.end() ? nullptr : rit->second;
}

const OpDef& lookup(std::string_view name) {
  const OpDef* op = find(name);
  if (!op) throw std::invalid_argument("unknown op '" + std::string(name) + "'");
  return *op;
}

// Built-in rows only: sweeps over the table test what aotgrad ships, and a span over the run-time
// rows could not stay valid while another thread registers.
std::span<const OpDef* const> all_ops() {
  return registry().rows;
}

}  // namespace aotgrad::ops
