#include "partition/memory_budget.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#include "aotgrad/memory_budget.h"

namespace aotgrad {
namespace {

thread_local std::optional<double> t_current_budget;

}  // namespace

MemoryBudgetGuard::MemoryBudgetGuard(double budget) : prev_(t_current_budget) {
  partition::check_memory_budget(budget, "MemoryBudgetGuard budget");
  t_current_budget = budget;
}

MemoryBudgetGuard::~MemoryBudgetGuard() {
  t_current_budget = prev_;
}

std::optional<double> current_memory_budget() {
  return t_current_budget;
}

}  // namespace aotgrad

namespace aotgrad::partition {
namespace {

// One traced graph's noted budgets, with the op of each noted node so that a stale table (its
// graph destroyed mid-trace, a new graph allocated at the same address) is recognised.
struct NotedBudgets {
  std::vector<double> budget;
  std::vector<const ops::OpDef*> op;
};

// Few graphs are ever traced at once on one thread; a bound keeps tables of abandoned traces
// (an exception in the middle of a trace) from piling up.
constexpr size_t kMaxTables = 8;
thread_local std::unordered_map<const graph::Graph*, NotedBudgets> t_tables;

}  // namespace

void check_memory_budget(double budget, std::string_view what) {
  if (budget >= 0.0 && budget <= 1.0) return;
  std::ostringstream os;
  os << what << " is " << budget
     << "; a memory budget must be in [0, 1] (0 = recompute everything recomputable, "
        "1 = the runtime-optimal min cut)";
  throw std::invalid_argument(os.str());
}

void note_node_budget(const graph::Graph& g, size_t node_index) {
  std::optional<double> b = current_memory_budget();
  if (!b || node_index >= g.nodes().size()) return;
  if (!t_tables.count(&g) && t_tables.size() >= kMaxTables) t_tables.clear();
  NotedBudgets& t = t_tables[&g];
  // Nodes are appended in order, so a table that already reaches this index is stale.
  if (node_index < t.budget.size() && t.op[node_index]) t = NotedBudgets{};
  if (t.budget.size() <= node_index) {
    t.budget.resize(node_index + 1, std::numeric_limits<double>::quiet_NaN());
    t.op.resize(node_index + 1, nullptr);
  }
  t.budget[node_index] = *b;
  t.op[node_index] = g.nodes()[node_index].op;
}

std::vector<double> take_node_budgets(const graph::Graph& g) {
  std::vector<double> out(g.nodes().size(), std::numeric_limits<double>::quiet_NaN());
  auto it = t_tables.find(&g);
  if (it == t_tables.end()) return out;
  NotedBudgets t = std::move(it->second);
  t_tables.erase(it);
  if (t.budget.size() > g.nodes().size()) return out;
  for (size_t i = 0; i < t.budget.size(); ++i)
    if (t.op[i] && t.op[i] != g.nodes()[i].op) return out;
  for (size_t i = 0; i < t.budget.size(); ++i)
    if (t.op[i]) out[i] = t.budget[i];
  return out;
}

}  // namespace aotgrad::partition
