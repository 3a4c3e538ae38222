#include "partition/memory_budget.h"

#include <sstream>
#include <stdexcept>

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

void check_memory_budget(double budget, std::string_view what) {
  if (budget >= 0.0 && budget <= 1.0) return;
  std::ostringstream os;
  os << what << " is " << budget
     << "; a memory budget must be in [0, 1] (0 = recompute everything recomputable, "
        "1 = the runtime-optimal min cut)";
  throw std::invalid_argument(os.str());
}

}  // namespace aotgrad::partition
