#include "autograd/view_creation.h"

#include <cctype>
#include <stdexcept>

#include "aotgrad/autograd.h"
#include "autograd/nodes.h"

namespace aotgrad::autograd {

bool returns_multiple_views(const ops::OpDef& op) {
  if (!op.is_view()) return false;
  const ops::Schema& s = op.parsed_schema();
  return s.returns.size() == 1 && s.returns[0].type == ops::ArgType::tensor_list &&
         s.returns[0].alias_set == s.args[op.view_of_arg()].alias_set;
}

void record_view_creation(const Tensor& view, const Tensor& self, bool multi_output) {
  // Only a tensor that can require grad can ever hit the checks below.
  if (!is_floating(view.dtype())) return;
  ViewCreation c = !grad_mode_enabled() ? ViewCreation::no_grad_mode
                   : multi_output       ? ViewCreation::multi_output
                                        : ViewCreation::normal;
  if (c == ViewCreation::normal && self.is_view() && self.impl()->autograd)
    c = self.impl()->autograd->view_creation;
  if (c == ViewCreation::normal && !view.impl()->autograd) return;
  AutogradMeta& m = view.impl()->autograd_meta();
  m.view_creation = c;
  m.view_creation_version = view.version();
}

bool written_since_special_view_creation(const Tensor& t) {
  const AutogradMeta* m = t.impl()->autograd.get();
  return t.is_view() && m && m->view_creation != ViewCreation::normal &&
         t.version() != m->view_creation_version;
}

void check_view_creation(const Tensor& view, const ViewHistory& history, bool indirect) {
  const AutogradMeta* m = view.impl()->autograd.get();
  if (!view.is_view() || !m || m->view_creation == ViewCreation::normal) return;
  raise_view_creation(m->view_creation, history, indirect);
}

void raise_view_creation(ViewCreation creation, const ViewHistory& history, bool indirect) {
  // PyTorch's texts (torch/csrc/autograd/variable.cpp, handle_view_on_rebase), word for word:
  // users search for them.
  const std::string modified =
      indirect ? "its base or another view of its base has been" : "is being";
  const std::string output =
      "Output " + std::to_string(history.output_nr) + " of " + history.grad_fn_name;
  std::string msg;
  if (creation == ViewCreation::no_grad_mode || !history.has_grad_fn) {
    std::string prefix = history.has_grad_fn ? output + " is a view of a view which was created in"
                                             : "A view was created in";
    msg = prefix + " no_grad mode and " + modified + " modified inplace with grad mode enabled.";
  } else {
    msg = output + " is a view and " + modified + " modified inplace.";
  }
  if (creation == ViewCreation::multi_output)
    msg +=
        " This view is the output of a function that returns multiple views. Such functions do "
        "not allow the output views to be modified inplace. You should replace the inplace "
        "operation by an out-of-place one.";
  else
    msg +=
        " Given that this use case is ambiguous and error-prone, it is forbidden. You can "
        "clarify your code by moving both the view and the inplace either both inside the "
        "no_grad block (if you don't want the inplace to be tracked) or both outside (if you "
        "want the inplace to be tracked).";
  throw std::runtime_error(msg);
}

std::optional<SpecialCreation> special_creation_of(const Tensor& t) {
  const AutogradMeta* m = t.impl()->autograd.get();
  if (!t.is_view() || !m || m->view_creation == ViewCreation::normal) return std::nullopt;
  return SpecialCreation{m->view_creation, view_history(t), t._base().requires_grad(),
                         written_since_special_view_creation(t),
                         m->view_creation != ViewCreation::no_grad_mode && history_reaches_base(t)};
}

std::string pytorch_node_name(std::string_view op_name) {
  if (op_name.rfind("aten.", 0) == 0) op_name.remove_prefix(5);
  op_name = op_name.substr(0, op_name.find('.'));
  std::string out;
  bool upper = true;
  for (char c : op_name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  return out + "Backward0";
}

}  // namespace aotgrad::autograd
