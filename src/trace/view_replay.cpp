// trace::replay_view (functionalize.h): regenerating, with the eager interpreter, an alias a
// traced function returned.
#include <optional>

#include "aotgrad/autograd.h"
#include "trace/functionalize.h"

namespace aotgrad::trace {

const std::vector<Tensor>* PieceCache::find(const Tensor& base, const ViewStep& step) const {
  for (const Entry& e : entries_)
    if (e.base == base.impl_ptr() && e.group == step.piece_group && e.grad_mode == step.grad_mode)
      return &e.pieces;
  return nullptr;
}

const std::vector<Tensor>& PieceCache::add(const Tensor& base, const ViewStep& step,
                                           std::vector<Tensor> pieces) {
  entries_.push_back({base.impl_ptr(), step.piece_group, step.grad_mode, std::move(pieces)});
  return entries_.back().pieces;
}

Tensor replay_view(Tensor base, const std::vector<ViewStep>& chain, PieceCache& pieces) {
  for (const ViewStep& step : chain) {
    std::optional<NoGradGuard> no_grad;
    if (!step.grad_mode) no_grad.emplace();
    if (step.piece_of) {
      // A piece of split / chunk / unbind is taken from the op itself, so that it carries what
      // eager gives it: its node (UnbindBackward0) and the ban on in-place writes.
      const std::vector<Tensor>* made = pieces.find(base, step);
      if (!made) {
        ops::OpArgs args = step.piece_args;
        args[step.piece_of->view_of_arg()] = base;
        made = &pieces.add(base, step, ops::dispatch(*step.piece_of, std::move(args)));
      }
      base = made->at(step.piece);
    } else {
      ops::OpArgs args = step.args;
      args[step.op->view_of_arg()] = base;
      base = ops::dispatch(*step.op, std::move(args)).at(0);
      if (step.plain && base.is_view()) base.impl()->base.reset();
    }
    // No version a storage reaches: the view stays "written since made" whatever comes next.
    if (step.written_after && base.impl()->autograd)
      base.impl()->autograd->view_creation_version = UINT64_MAX;
  }
  return base;
}

}  // namespace aotgrad::trace
