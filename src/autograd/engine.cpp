// The backward engine: runs recorded nodes from the roots towards the leaves.
//
// Reading guide: run_backward() first counts, for every node reachable from the roots, how many
// edges point at it (dependencies), then pops ready nodes in decreasing sequence number (the
// order PyTorch uses), summing incoming gradients per output slot in an InputBuffer. grad() uses
// the same walk, runs only the nodes on a path to a requested input, and captures gradients
// there instead of accumulating them. Tensors a Trace interpreter owns go to it (traced.h).
#include <map>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "autograd/nodes.h"
#include "autograd/traced.h"

namespace aotgrad::autograd {
namespace {

struct Capture {
  Node* node;
  uint32_t slot;
  size_t index;  // position in grad()'s result
};

Tensor accumulate(const Tensor& acc, const Tensor& g) {
  if (!acc.defined()) return g;
  if (!g.defined()) return acc;
  return add(acc, g);
}

Tensor zeros_for(const Node& n, uint32_t slot) {
  return zeros(n.output_sizes.at(slot), n.output_dtypes.at(slot));
}

// The nodes among `seen` that must run for grad(): those with an edge, direct or not, to a
// capture's node. A capture's node itself runs only if it is on the way to another capture.
std::unordered_set<Node*> nodes_reaching(const std::unordered_set<Node*>& seen,
                                         const std::vector<Capture>& captures) {
  std::unordered_map<Node*, std::vector<Node*>> parents;
  for (Node* n : seen)
    for (const Edge& e : n->next_edges)
      if (e.node) parents[e.node.get()].push_back(n);
  std::unordered_set<Node*> reach;
  std::vector<Node*> stack;
  for (const Capture& c : captures) stack.push_back(c.node);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Node* p : parents[n])
      if (reach.insert(p).second) stack.push_back(p);
  }
  return reach;
}

std::vector<Tensor> run_backward(const std::vector<Tensor>& outputs,
                                 const std::vector<Tensor>& grad_outputs, bool retain_graph,
                                 const std::vector<Tensor>* inputs, bool allow_unused) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw std::invalid_argument("backward: got " + std::to_string(grad_outputs.size()) +
                                " gradients for " + std::to_string(outputs.size()) + " outputs");
  NoGradGuard no_grad;  // VJP rules run without recording (no double backward)

  std::vector<std::pair<Edge, Tensor>> roots;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& out = outputs[i];
    Edge e = gradient_edge(out);
    if (!e.node)
      throw std::invalid_argument("element " + std::to_string(i) +
                                  " of tensors does not require grad and does not have a grad_fn");
    Tensor g = grad_outputs.empty() ? Tensor() : grad_outputs[i];
    if (!g.defined()) {
      if (out.numel() != 1)
        throw std::invalid_argument(
            "grad can be implicitly created only for scalar outputs; output " + std::to_string(i) +
            " has shape " + shape_to_string(out.sizes()) + ": pass a gradient");
      g = ones(out.sizes(), out.dtype());
    } else if (g.sizes() != out.sizes()) {
      throw std::invalid_argument("backward: gradient " + std::to_string(i) + " has shape " +
                                  shape_to_string(g.sizes()) + " but the output has shape " +
                                  shape_to_string(out.sizes()));
    }
    roots.emplace_back(e, g);
  }

  // Dependencies and, for grad(), which inputs to capture.
  std::unordered_map<Node*, int> deps;
  std::unordered_set<Node*> seen;
  std::vector<Node*> stack;
  for (auto& [e, g] : roots)
    if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.node) continue;
      ++deps[e.node.get()];
      if (seen.insert(e.node.get()).second) stack.push_back(e.node.get());
    }
  }
  std::vector<Capture> captures;
  std::vector<Tensor> result;
  if (inputs) {
    result.resize(inputs->size());
    for (size_t i = 0; i < inputs->size(); ++i) {
      Edge e = gradient_edge((*inputs)[i]);
      if (!e.node)
        throw std::invalid_argument("grad: input " + std::to_string(i) + " does not require grad");
      captures.push_back({e.node.get(), e.input_nr, i});
    }
  }
  // grad() runs (and frees) only the nodes on a path to an input, as PyTorch's engine does:
  // history upstream of the inputs stays usable without retain_graph.
  std::unordered_set<Node*> needed;
  if (inputs) needed = nodes_reaching(seen, captures);

  std::unordered_map<Node*, std::vector<Tensor>> buffers;
  std::unordered_map<Node*, std::shared_ptr<Node>> owners;
  auto deliver = [&](const std::shared_ptr<Node>& node, uint32_t slot, const Tensor& g) {
    auto& buf = buffers[node.get()];
    if (buf.size() < node->num_outputs()) buf.resize(node->num_outputs());
    buf[slot] = accumulate(buf[slot], g);
    owners[node.get()] = node;
  };
  for (auto& [e, g] : roots) deliver(e.node, e.input_nr, g);

  auto later_first = [](Node* a, Node* b) { return a->sequence_nr < b->sequence_nr; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  for (auto& [e, g] : roots)
    if (deps[e.node.get()] == 0 && buffers.count(e.node.get())) ready.push(e.node.get());
  std::unordered_set<Node*> queued;

  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    if (!queued.insert(n).second) continue;
    std::shared_ptr<Node> keep = owners[n];
    std::vector<Tensor> grads = std::move(buffers[n]);
    buffers.erase(n);
    grads.resize(n->num_outputs());
    for (const Capture& c : captures)
      if (c.node == n) result[c.index] = grads[c.slot];
    for (auto& [slot, weak] : n->retained_grads)
      if (auto impl = weak.lock(); impl && grads[slot].defined()) {
        AutogradMeta& m = impl->autograd_meta();
        m.grad = m.grad.defined() ? add(m.grad, grads[slot]) : grads[slot];
      }
    bool any = false;
    for (const Tensor& g : grads) any = any || g.defined();
    // grad() does not accumulate into leaves.
    bool skip = inputs && (dynamic_cast<AccumulateGrad*>(n) != nullptr || !needed.count(n));
    std::vector<Tensor> grad_inputs;
    if (any && !skip) {
      for (uint32_t s = 0; s < grads.size(); ++s)
        if (!grads[s].defined() && n->num_outputs() > 1 && n->materializes_grads())
          grads[s] = zeros_for(*n, s);
      grad_inputs = n->apply(std::move(grads));
      if (!retain_graph) n->release_saved();
    }
    for (size_t i = 0; i < n->next_edges.size(); ++i) {
      const Edge& e = n->next_edges[i];
      if (!e.node) continue;
      if (i < grad_inputs.size() && grad_inputs[i].defined())
        deliver(e.node, e.input_nr, grad_inputs[i]);
      if (--deps[e.node.get()] == 0) {
        owners[e.node.get()] = e.node;
        ready.push(e.node.get());
      }
    }
  }
  if (inputs && !allow_unused)
    for (size_t i = 0; i < result.size(); ++i)
      if (!result[i].defined())
        throw std::invalid_argument("grad: input " + std::to_string(i) +
                                    " was not used in computing the outputs (pass "
                                    "allow_unused=true to get an undefined gradient)");
  return result;
}

// The interpreter tracing `outputs`, if one is (their history is its graph, not nodes).
TracedAutograd* tracer_of(const std::vector<Tensor>& outputs) {
  for (const Tensor& t : outputs)
    if (TracedAutograd* traced = traced_autograd_for(t)) return traced;
  return nullptr;
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              bool retain_graph) {
  if (TracedAutograd* traced = tracer_of(outputs)) return traced->backward(outputs);
  run_backward(outputs, grad_outputs, retain_graph, nullptr, false);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, bool retain_graph,
                         bool allow_unused) {
  if (TracedAutograd* traced = tracer_of(outputs))
    return traced->grad(outputs, inputs, grad_outputs, retain_graph, allow_unused);
  return run_backward(outputs, grad_outputs, retain_graph, &inputs, allow_unused);
}

}  // namespace aotgrad::autograd
