// trace::replay_view (functionalize.h): regenerating, with the eager interpreter, an alias a
// traced function returned.
#include <optional>

#include "aotgrad/autograd.h"
#include "trace/functionalize.h"

namespace aotgrad::trace {

Tensor replay_view(Tensor base, const std::vector<ViewStep>& chain) {
  for (const ViewStep& step : chain) {
    std::optional<NoGradGuard> no_grad;
    if (!step.grad_mode) no_grad.emplace();
    // A piece of split / chunk / unbind is taken from the op itself, so that it carries what eager
    // gives it: its node (UnbindBackward0) and the ban on in-place writes.
    const ops::OpDef& op = step.piece_of ? *step.piece_of : *step.op;
    ops::OpArgs args = step.piece_of ? step.piece_args : step.args;
    args[op.view_of_arg()] = base;
    base = ops::dispatch(op, std::move(args)).at(step.piece_of ? step.piece : 0);
    // No version a storage reaches: the view stays "written since made" whatever comes next.
    if (step.written_after && base.impl()->autograd)
      base.impl()->autograd->view_creation_version = UINT64_MAX;
  }
  return base;
}

}  // namespace aotgrad::trace
