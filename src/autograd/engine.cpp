// The backward engine: runs recorded nodes from the roots towards the leaves.
//
// Reading guide: a GraphTask is one backward() or grad() call. Its constructor turns outputs and
// their gradients into roots, counts for every node reachable from them how many edges point at
// it (dependencies) and, for grad(), which nodes lie on a path to a requested input. execute()
// then pops ready nodes in decreasing sequence number (the order PyTorch uses), summing incoming
// gradients per output slot in a buffer. grad() runs only the nodes on a path to a requested
// input and captures gradients there instead of accumulating them. Tensors a Trace interpreter
// owns go to it (traced.h).
//
// Grad mode during the walk is create_graph: with it on, each node's apply records its ops (the
// VJPs are Tensor ops), so the gradients carry history and can be differentiated again. A node
// that cannot record (Node::double_backward_error, or a VJP that called a row without a
// derivative) runs without recording and its results get a DelayedError node instead.
#include "autograd/engine.h"

#include <algorithm>
#include <optional>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "aotgrad/autograd.h"
#include "aotgrad/ops.h"
#include "autograd/grad_mode_scope.h"
#include "autograd/nodes.h"
#include "autograd/traced.h"
#include "autograd/view_creation.h"
#include "kernels/factory.h"
#include "tensor/current_op.h"
#include "tensor/iter.h"
#include "tensor/thread_loan.h"

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

std::string shown_name(const Node& n) {
  return dynamic_cast<const OpNode*>(&n) ? pytorch_node_name(n.name()) : n.name();
}

// PyTorch's validate_outputs: a gradient of another shape than the one `to` recorded for its
// slot (the tensor's geometry was changed in place under no_grad: t_, unsqueeze_, ...) is summed
// to that shape when the recorded one broadcasts to it, and refused otherwise. Of the same shape,
// it is taken as it is, whatever the layout it stands for.
Tensor fit_gradient(const Node& to, uint32_t slot, Tensor g, const Node* from, size_t index) {
  std::span<const int64_t> fitted;
  if (!g.defined() || !to.fitted_sizes(slot, fitted)) return g;
  if (std::ranges::equal(g.sizes(), fitted)) return g;
  const IntList want(fitted.begin(), fitted.end());
  if (!expandable_to(want, g.sizes()))
    throw std::runtime_error((from ? "Function " + shown_name(*from) + " returned an " : std::string()) +
                             "invalid gradient at index " + std::to_string(index) + " - got " +
                             shape_to_string(g.sizes()) + " but expected shape compatible with " +
                             shape_to_string(want));
  return sum_to_size(g, want);
}

Tensor zeros_for(const Node& n, uint32_t slot) {
  return zeros(n.output_sizes.at(slot), n.output_dtypes.at(slot));
}

// The implicit gradient of a scalar output: ones. Without an interpreter on the stack the
// kernel is called directly (what ones() would reach after dispatch, for a tenth of the cost of a
// small backward); a tracer must see the op, so it is dispatched otherwise.
Tensor seed_gradient(const Tensor& out) {
  if (!interpreter_stack_empty() || out.is_fake()) return ones(out.sizes(), out.dtype());
  CurrentOpScope scope("aten.ones.default");
  return kernels::full(out.sizes(), 1, out.dtype());
}

// What one walk knows of a node: dependencies left, its incoming-gradient buffer, the owner
// that keeps it alive once a gradient reached it.
struct NodeState {
  Node* node = nullptr;
  int deps = 0;  // edges from nodes that have not run yet
  bool has_buffer = false;
  bool done = false;
  bool needed = false;  // grad(): on a path to a requested input
  std::vector<Tensor> buffer;
  std::shared_ptr<Node> owner;
};

// The walk's nodes in discovery order, in a vector the walk lends it (WalkScratch::states). A
// backward of a few nodes (the per-call case: a compiled function's node and its leaves) finds a
// node by scanning this short vector instead of maintaining a hash map per field; past kLinearLimit
// nodes an index map takes over.
class NodeTable {
 public:
  static constexpr size_t kLinearLimit = 16;

  explicit NodeTable(std::vector<NodeState>& states) : states_(states) {}

  // The index of `n`'s state, added if new; second: whether it was.
  std::pair<uint32_t, bool> insert(Node* n) {
    if (std::optional<uint32_t> i = find(n)) return {*i, false};
    auto i = static_cast<uint32_t>(states_.size());
    states_.push_back(NodeState{});
    states_.back().node = n;
    if (!index_.empty()) {
      index_.emplace(n, i);
    } else if (states_.size() > kLinearLimit) {
      for (uint32_t k = 0; k < states_.size(); ++k) index_.emplace(states_[k].node, k);
    }
    return {i, true};
  }
  std::optional<uint32_t> find(Node* n) const {
    if (index_.empty()) {
      for (uint32_t k = 0; k < states_.size(); ++k)
        if (states_[k].node == n) return k;
      return std::nullopt;
    }
    auto it = index_.find(n);
    if (it == index_.end()) return std::nullopt;
    return it->second;
  }
  NodeState& operator[](uint32_t i) { return states_[i]; }
  std::vector<NodeState>& states() { return states_; }

 private:
  std::vector<NodeState>& states_;
  std::unordered_map<Node*, uint32_t> index_;  // empty while states_ is short
};

// The vectors one walk works in, borrowed from its thread (ThreadLoan): the backward of a small
// compiled call allocates none of them.
struct WalkScratch {
  std::vector<std::pair<Edge, Tensor>> roots;
  std::vector<NodeState> states;
  std::vector<uint32_t> ready, stack;
  // Empty gradient buffers with capacity, from nodes that ran: the next node's buffer takes one
  // instead of allocating. Kept across walks (they hold no tensor), so the backward of a small
  // compiled call allocates no buffer.
  std::vector<std::vector<Tensor>> spare_buffers;

  // Releases the nodes and gradients the walk left here.
  void reset() {
    constexpr size_t kKeep = 64;
    clear_keeping(roots, kKeep);
    clear_keeping(states, kKeep);
    clear_keeping(ready, kKeep);
    clear_keeping(stack, kKeep);
    if (spare_buffers.size() > 16) spare_buffers.resize(16);
  }
};

// Marks the nodes of `table` that must run for grad(): those with an edge, direct or not, to a
// capture's node. A capture's node itself runs only if it is on the way to another capture.
void mark_nodes_reaching(NodeTable& table, const std::vector<Capture>& captures) {
  std::unordered_map<Node*, std::vector<Node*>> parents;
  for (const NodeState& s : table.states())
    for (const Edge& e : s.node->next_edges)
      if (e.node) parents[e.node.get()].push_back(s.node);
  std::unordered_set<Node*> reach;
  std::vector<Node*> stack;
  for (const Capture& c : captures) stack.push_back(c.node);
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (Node* p : parents[n])
      if (reach.insert(p).second) stack.push_back(p);
  }
  for (NodeState& s : table.states()) s.needed = reach.count(s.node) > 0;
}

// Gives `results` (what `node` returned for `grads`) a DelayedError grad_fn raising `reason`,
// when a second derivative could flow through them: some incoming gradient has history, or the
// node has inputs that require grad (its saved values would have carried their history).
std::vector<Tensor> delay_error(const std::string& reason, std::vector<Tensor> results,
                                const std::vector<Edge>& grad_edges, const Node& node) {
  auto error = std::make_shared<DelayedError>(reason);
  for (const Edge& e : grad_edges)
    if (e.node) error->next_edges.push_back(e);
  for (const Edge& e : node.next_edges)
    if (e.node) error->next_edges.push_back(e);
  if (error->next_edges.empty()) return results;
  for (const Tensor& r : results) {
    error->output_sizes.push_back(r.defined() ? r.sizes() : IntList{});
    error->output_dtypes.push_back(r.defined() ? r.dtype() : DType::f32);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].defined() || !is_floating(results[i].dtype())) continue;
    results[i] = detached_alias(results[i]);  // a pass-through gradient keeps its own history
    set_history(results[i], error, static_cast<uint32_t>(i));
  }
  return results;
}

// n.apply(grads), recorded when create_graph (see the file comment).
std::vector<Tensor> apply_node(Node& n, std::vector<Tensor>&& grads, bool create_graph) {
  if (!create_graph) return n.apply(std::move(grads));
  std::vector<Edge> grad_edges;
  for (const Tensor& g : grads) grad_edges.push_back(g.defined() ? gradient_edge(g) : Edge{});
  std::string reason = n.double_backward_error();
  std::vector<Tensor> results;
  if (reason.empty()) {
    UndifferentiableOpWatch watch;
    results = n.apply(std::move(grads));
    if (!watch.first().empty())
      reason = n.name() + "'s backward is not differentiable (it calls " + watch.first() +
               ", which has no derivative); differentiating it twice (create_graph=true) is not "
               "supported";
  } else {
    NoGradGuard no_grad;
    results = n.apply(std::move(grads));
  }
  if (reason.empty()) return results;
  return delay_error(reason, std::move(results), grad_edges, n);
}

// One backward() or grad() call: see the file comment.
class GraphTask {
 public:
  GraphTask(std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs,
            bool retain_graph, bool create_graph, const std::vector<Tensor>* inputs)
      : retain_graph_(retain_graph),
        create_graph_(create_graph),
        inputs_(inputs),
        roots_(scratch_->roots),
        table_(scratch_->states),
        ready_(scratch_->ready) {
    make_roots(outputs, grad_outputs);
    count_dependencies();
    if (inputs_) make_captures();
  }

  // Runs the walk; for grad(), returns one gradient per input (undefined where none flowed).
  std::vector<Tensor> execute();

 private:
  void make_roots(std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs);
  void count_dependencies();
  void make_captures();
  // from: the node whose gradient_inputs[index] g is; null for a root's gradient.
  void deliver(const std::shared_ptr<Node>& node, uint32_t slot, const Tensor& g,
               const Node* from, size_t index);
  void run_node(uint32_t i);
  void make_ready(uint32_t i);
  // Empties `v` and keeps its capacity for a later node's buffer (WalkScratch::spare_buffers).
  void keep_spare(std::vector<Tensor>&& v);

  ThreadLoan<WalkScratch> scratch_;  // first: the members below use its vectors; outlives them
  bool retain_graph_, create_graph_;
  const std::vector<Tensor>* inputs_;  // grad()'s inputs; null for backward()
  std::vector<std::pair<Edge, Tensor>>& roots_;
  NodeTable table_;  // every node reachable from the roots
  std::vector<Capture> captures_;
  std::vector<Tensor> result_;
  std::vector<uint32_t>& ready_;  // indices into table_: a heap, later sequence numbers first
};

void GraphTask::make_roots(std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs) {
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    throw std::invalid_argument("backward: got " + std::to_string(grad_outputs.size()) +
                                " gradients for " + std::to_string(outputs.size()) + " outputs");
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
      g = seed_gradient(out);
    } else if (g.sizes() != out.sizes()) {
      throw std::invalid_argument("backward: gradient " + std::to_string(i) + " has shape " +
                                  shape_to_string(g.sizes()) + " but the output has shape " +
                                  shape_to_string(out.sizes()));
    }
    roots_.emplace_back(e, g);
  }
}

void GraphTask::count_dependencies() {
  std::vector<uint32_t>& stack = scratch_->stack;
  for (auto& [e, g] : roots_)
    if (auto [i, added] = table_.insert(e.node.get()); added) stack.push_back(i);
  while (!stack.empty()) {
    Node* n = table_[stack.back()].node;
    stack.pop_back();
    for (const Edge& e : n->next_edges) {
      if (!e.node) continue;
      auto [i, added] = table_.insert(e.node.get());
      ++table_[i].deps;
      if (added) stack.push_back(i);
    }
  }
}

void GraphTask::make_captures() {
  result_.resize(inputs_->size());
  for (size_t i = 0; i < inputs_->size(); ++i) {
    Edge e = gradient_edge((*inputs_)[i]);
    if (!e.node)
      throw std::invalid_argument("grad: input " + std::to_string(i) + " does not require grad");
    captures_.push_back({e.node.get(), e.input_nr, i});
  }
  // grad() runs (and frees) only the nodes on a path to an input, as PyTorch's engine does:
  // history upstream of the inputs stays usable without retain_graph.
  mark_nodes_reaching(table_, captures_);
}

void GraphTask::deliver(const std::shared_ptr<Node>& node, uint32_t slot, const Tensor& g,
                        const Node* from, size_t index) {
  NodeState& s = table_[table_.insert(node.get()).first];
  if (s.buffer.size() < node->num_outputs()) {
    std::vector<std::vector<Tensor>>& spares = scratch_->spare_buffers;
    if (s.buffer.capacity() == 0 && !spares.empty()) {
      s.buffer = std::move(spares.back());
      spares.pop_back();
    }
    s.buffer.resize(node->num_outputs());
  }
  s.buffer[slot] = accumulate(s.buffer[slot], fit_gradient(*node, slot, g, from, index));
  s.has_buffer = true;
  if (!s.owner) s.owner = node;
}

void GraphTask::make_ready(uint32_t i) {
  ready_.push_back(i);
  std::push_heap(ready_.begin(), ready_.end(), [this](uint32_t a, uint32_t b) {
    return table_[a].node->sequence_nr < table_[b].node->sequence_nr;
  });
}

void GraphTask::run_node(uint32_t i) {
  std::shared_ptr<Node> keep = table_[i].owner;
  Node* n = table_[i].node;
  const bool needed = table_[i].needed;
  std::vector<Tensor> grads = std::move(table_[i].buffer);
  table_[i].buffer = {};
  table_[i].has_buffer = false;
  grads.resize(n->num_outputs());
  for (const Capture& c : captures_)
    if (c.node == n) result_[c.index] = grads[c.slot];
  for (auto& [slot, weak] : n->retained_grads)
    if (auto impl = weak.lock(); impl && grads[slot].defined()) {
      AutogradMeta& m = impl->autograd_meta();
      m.grad = m.grad.defined() ? add(m.grad, grads[slot]) : grads[slot];
    }
  bool any = false;
  for (const Tensor& g : grads) any = any || g.defined();
  // grad() does not accumulate into leaves.
  bool skip = inputs_ && (dynamic_cast<AccumulateGrad*>(n) != nullptr || !needed);
  std::vector<Tensor> grad_inputs;
  if (any && !skip) {
    for (uint32_t s = 0; s < grads.size(); ++s)
      if (!grads[s].defined() && n->num_outputs() > 1 && n->materializes_grads())
        grads[s] = zeros_for(*n, s);
    grad_inputs = apply_node(*n, std::move(grads), create_graph_);
    if (!retain_graph_) n->release_saved();
  }
  // A node that took its gradients as they came left the vector here: its capacity serves a
  // later node's buffer. (A node that moved the vector away left it empty, without capacity.)
  keep_spare(std::move(grads));
  for (size_t k = 0; k < n->next_edges.size(); ++k) {
    const Edge& e = n->next_edges[k];
    if (!e.node) continue;
    if (k < grad_inputs.size() && grad_inputs[k].defined())
      deliver(e.node, e.input_nr, grad_inputs[k], n, k);
    uint32_t j = table_.insert(e.node.get()).first;
    if (--table_[j].deps == 0) {
      table_[j].owner = e.node;
      make_ready(j);
    }
  }
  keep_spare(std::move(grad_inputs));
}

void GraphTask::keep_spare(std::vector<Tensor>&& v) {
  v.clear();
  if (v.capacity() > 0 && v.capacity() <= 64) scratch_->spare_buffers.push_back(std::move(v));
}

std::vector<Tensor> GraphTask::execute() {
  GradModeScope grad_mode(create_graph_);
  for (size_t r = 0; r < roots_.size(); ++r)
    deliver(roots_[r].first.node, roots_[r].first.input_nr, roots_[r].second, nullptr, r);
  for (auto& [e, g] : roots_) {
    uint32_t i = table_.insert(e.node.get()).first;
    if (table_[i].deps == 0 && table_[i].has_buffer) make_ready(i);
  }
  while (!ready_.empty()) {
    std::pop_heap(ready_.begin(), ready_.end(), [this](uint32_t a, uint32_t b) {
      return table_[a].node->sequence_nr < table_[b].node->sequence_nr;
    });
    uint32_t i = ready_.back();
    ready_.pop_back();
    if (!table_[i].done) {
      table_[i].done = true;
      run_node(i);
    }
  }
  return std::move(result_);
}

std::vector<Tensor> run_backward(std::span<const Tensor> outputs,
                                 std::span<const Tensor> grad_outputs, bool retain_graph,
                                 bool create_graph, const std::vector<Tensor>* inputs,
                                 bool allow_unused) {
  GraphTask task(outputs, grad_outputs, retain_graph, create_graph, inputs);
  std::vector<Tensor> result = task.execute();
  if (inputs && !allow_unused)
    for (size_t i = 0; i < result.size(); ++i)
      if (!result[i].defined())
        throw std::invalid_argument("grad: input " + std::to_string(i) +
                                    " was not used in computing the outputs (pass "
                                    "allow_unused=true to get an undefined gradient)");
  return result;
}

// The interpreter tracing `outputs`, if one is (their history is its graph, not nodes).
TracedAutograd* tracer_of(std::span<const Tensor> outputs, bool create_graph) {
  for (const Tensor& t : outputs)
    if (TracedAutograd* traced = traced_autograd_for(t)) {
      if (create_graph)
        throw std::invalid_argument(
            "create_graph=true inside a function aot_function traces is not supported: a traced "
            "gradient cannot be differentiated again; compute higher-order gradients eagerly");
      return traced;
    }
  return nullptr;
}

}  // namespace

void backward(const std::vector<Tensor>& outputs, const std::vector<Tensor>& grad_outputs,
              std::optional<bool> retain_graph, bool create_graph) {
  backward_of(outputs, grad_outputs, retain_graph, create_graph);
}

void backward_of(std::span<const Tensor> outputs, std::span<const Tensor> grad_outputs,
                 std::optional<bool> retain_graph, bool create_graph) {
  if (TracedAutograd* traced = tracer_of(outputs, create_graph))
    return traced->backward(std::vector<Tensor>(outputs.begin(), outputs.end()));
  run_backward(outputs, grad_outputs, retain_graph.value_or(create_graph), create_graph, nullptr,
               false);
}

std::vector<Tensor> grad(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                         const std::vector<Tensor>& grad_outputs, std::optional<bool> retain_graph,
                         bool create_graph, bool allow_unused) {
  bool retain = retain_graph.value_or(create_graph);
  if (TracedAutograd* traced = tracer_of(outputs, create_graph))
    return traced->grad(outputs, inputs, grad_outputs, retain, allow_unused);
  return run_backward(outputs, grad_outputs, retain, create_graph, &inputs, allow_unused);
}

}  // namespace aotgrad::autograd
