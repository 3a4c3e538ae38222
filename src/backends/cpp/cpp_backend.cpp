#include "backends/cpp/cpp_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "aot/log.h"
#include "backends/cpp/build.h"
#include "backends/cpp/codegen.h"
#include "backends/cpp/memory_plan.h"
#include "backends/cpp/schedule.h"
#include "backends/cpp/step_profile.h"
#include "backends/node_call.h"
#include "backends/small_buffer.h"
#include "kernels/copy.h"
#include "kernels/gemm.h"
#include "ops/attention.h"
#include "tensor/current_op.h"
#include "tensor/thread_loan.h"

namespace aotgrad::backends {
namespace {

using cpp::InnerStride;
using KernelFn = void (*)(const char* const*, char* const*, const int64_t*, const int64_t*,
                          const double*);

// A kernel output's place in a cat's result (cat_fusion.h): allocated by the first kernel that
// writes into it, as the cat's traced (contiguous) result.
struct CatSlice {
  int64_t cat_value = -1;  // the cat's result; -1: the output has its own buffer
  ops::TensorMeta cat_meta;
  int64_t offset = 0;  // elements
  IntList strides;     // per dim group (an attention backward's gradient: per dim)
  IntList sizes;       // an attention backward's gradient: its sizes
};

struct KernelCall {
  std::string name;
  KernelFn fn = nullptr;
  IntList shape;
  std::vector<IntList> dim_groups;
  IntList loop_sizes;  // per dim group: the product of its dims of `shape` (the kernel's sizes)
  std::vector<uint32_t> inputs;
  std::vector<InnerStride> inner;
  std::vector<uint32_t> outputs;
  std::vector<ops::TensorMeta> output_metas;  // contiguous: k.shape, or a reduction's result
  std::vector<double> scalars;
  // The fallback when an input's layout differs: the folded expands feeding the kernel, then the
  // group's nodes.
  std::vector<uint32_t> nodes;
  std::vector<int32_t> reuse;  // per output: the input whose buffer it may take (memory_plan.h)
  std::vector<CatSlice> into;  // per output, or empty: none goes into a cat (cat_fusion.h)
};

// A product with its epilogue (gemm_fusion.h); `nodes` are the fallback when oneDNN cannot.
struct GemmCall {
  cpp::GemmFusion fusion;
  IntList out_sizes;
};

struct Program {
  struct Step {
    bool is_kernel = false;
    bool is_gemm = false;
    bool is_cat = false;
    int64_t pair_output = -1;          // an attention pair's step: the forward's output value
    std::vector<CatSlice> into;        // an attention backward's step: per gradient, or empty
    uint32_t index = 0;                // into externs (node index), kernels, gemms or cats
    std::vector<uint32_t> free_after;  // values whose last use is this step
    std::string label;                 // for the step profile (step_profile.h)
    bool product = false;              // a GEMM / convolution, fused or extern
  };
  size_t num_values = 0;
  std::vector<uint32_t> inputs, outputs;
  std::vector<uint32_t> free_at_start;  // inputs never used
  std::vector<NodeCall> externs;        // one per node
  std::vector<KernelCall> kernels;
  std::vector<GemmCall> gemms;
  std::vector<cpp::CatFusion> cats;
  std::vector<ops::TensorMeta> cat_metas;  // per cat: its result
  std::vector<Step> steps;
  std::shared_ptr<const cpp::SharedObject> library;  // keeps the kernels loaded
};

// A Program whose kernels are compiled on another thread (cpp::start_shared_object), so that
// compile_cpp returns once the graph is scheduled and its source written: the forward and
// backward graphs of a training step compile at once, and the backward's while the forward runs.
// The first call waits for the library and looks its kernels up, once; later calls pay one
// atomic load. A compiler error is thrown by every call, as compile_cpp threw it before.
class LinkedProgram {
 public:
  LinkedProgram(std::shared_ptr<Program> program, std::optional<cpp::ObjectFuture> library)
      : program_(std::move(program)), library_(std::move(library)), linked_(!library_) {}

  // Whether the library is loaded or failed already (get() would not wait).
  bool built() const {
    return !library_ || library_->wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  }

  // The program, linked; shared with this object. Throws as get() does.
  std::shared_ptr<const Program> linked_program() {
    get();
    return program_;
  }

  const Program& get() {
    if (linked_.load(std::memory_order_acquire)) return *program_;
    std::lock_guard lock(mutex_);
    if (!linked_.load(std::memory_order_relaxed)) {
      program_->library = library_->get();  // waits; rethrows the build's error
      for (KernelCall& c : program_->kernels)
        c.fn = reinterpret_cast<KernelFn>(program_->library->symbol(c.name));
      linked_.store(true, std::memory_order_release);
    }
    return *program_;
  }

 private:
  std::shared_ptr<Program> program_;
  std::optional<cpp::ObjectFuture> library_;
  std::mutex mutex_;
  std::atomic<bool> linked_;
};

// Whether a kernel output of `m` may be written over `t`, an input dying at the kernel: nothing
// else sees its memory (sole owner of a storage no view shares, no autograd state), and it is
// laid out exactly as the output.
bool may_take_buffer(const Tensor& t, const ops::TensorMeta& m) {
  const TensorImpl* impl = t.impl();
  return t.impl_ptr().use_count() == 1 && t.storage().use_count() == 1 && !impl->base &&
         !impl->autograd && t.dtype() == m.dtype && t.sizes() == m.sizes && t.is_contiguous() &&
         t.storage_offset() == 0;
}

// The result of the cat `c` goes into, allocated by the first step that writes into it.
Tensor& cat_of(const CatSlice& c, std::vector<Tensor>& slots) {
  Tensor& cat = slots[c.cat_value];
  if (!cat.defined()) cat = make_tensor(c.cat_meta.sizes, c.cat_meta.dtype);
  return cat;
}

// The address kernel output `c` is written at, its strides row filled in.
char* cat_slice(const CatSlice& c, std::vector<Tensor>& slots, int64_t* strides_row) {
  Tensor& cat = cat_of(c, slots);
  std::copy(c.strides.begin(), c.strides.end(), strides_row);
  return cat.impl()->data_bytes() + c.offset * cat.element_size();
}

// The cat step of a cat fusion: copies the parts no kernel wrote in place (another producer's
// value, or a kernel that ran its nodes unfused: then its views run first) into their slices.
void run_cat(const Program& p, uint32_t index, std::vector<Tensor>& slots) {
  const cpp::CatFusion& c = p.cats[index];
  const ops::TensorMeta& m = p.cat_metas[index];
  Tensor& cat = slots[c.output];
  if (!cat.defined()) cat = make_tensor(m.sizes, m.dtype);
  CurrentOpScope scope("cpp.cat");
  for (const cpp::CatPart& part : c.parts) {
    if (part.attention >= 0) continue;  // its attention backward wrote it
    if (part.kernel >= 0) {
      if (!slots[part.kernel_output].defined()) continue;  // written in place
      for (uint32_t n : part.chain) run_node_call(p.externs[n], slots);
    }
    kernels::copy_into(cat.slice(c.dim, part.start, part.start + part.size), slots[part.value]);
    for (uint32_t n : part.chain)
      for (uint32_t v : p.externs[n].outputs) slots[v] = Tensor();
  }
}

// `t`'s stride along each dim of `shape` it broadcasts to (0 where it broadcasts), into `out`
// (shape.size() elements): cpp::broadcast_strides without a vector per call.
void broadcast_strides_into(const Tensor& t, const IntList& shape, int64_t* out) {
  const IntList& sizes = t.sizes();
  const IntList& strides = t.strides();
  const size_t lead = shape.size() - sizes.size();
  std::fill_n(out, lead, 0);
  for (size_t d = 0; d < sizes.size(); ++d)
    out[lead + d] = sizes[d] != 1 && shape[lead + d] != 1 ? strides[d] : 0;
}

// The value slots of one call, borrowed from its thread (ThreadLoan): a small graph's call does
// not allocate them, and none of its values outlives it.
struct Slots {
  std::vector<Tensor> values;
  void reset() { clear_keeping(values, 4096); }  // up to 64 KiB kept per thread
};

// Runs a generated kernel; false (nothing written) when an input's actual layout does not fit
// the loop nest the code was specialized for (a graph input with other strides than traced).
// Its argument arrays live on the stack (SmallBuffer) for the usual few inputs and dims.
bool run_kernel(const KernelCall& k, std::vector<Tensor>& slots) {
  const size_t rank = k.dim_groups.size();
  const size_t num_in = k.inputs.size(), num_out = k.output_metas.size();
  // A kernel writing into a cat has a strides row per output after the inputs' (codegen.h).
  SmallBuffer<int64_t, 32> strides(rank * (num_in + k.into.size()), 0);
  SmallBuffer<int64_t, 8> bs(k.shape.size(), 0);
  SmallBuffer<const char*, 16> in(num_in, nullptr);
  for (size_t i = 0; i < num_in; ++i) {
    const Tensor& t = slots[k.inputs[i]];
    broadcast_strides_into(t, k.shape, bs.data());
    for (size_t d = 0; d < rank; ++d) {
      const IntList& dims = k.dim_groups[d];
      for (size_t j = 1; j < dims.size(); ++j)
        if (bs[dims[j - 1]] != bs[dims[j]] * k.shape[dims[j]]) return false;
      strides[i * rank + d] = dims.empty() ? 0 : bs[dims.back()];
    }
    int64_t last = strides[i * rank + rank - 1];
    if ((k.inner[i] == InnerStride::zero && last != 0) ||
        (k.inner[i] == InnerStride::unit && last != 1))
      return false;
    in[i] = t.impl()->data_bytes();
  }
  CurrentOpScope scope(k.name);
  SmallBuffer<Tensor, 8> outs(num_out);
  SmallBuffer<char*, 8> out(num_out, nullptr);
  for (size_t j = 0; j < num_out; ++j) {
    const ops::TensorMeta& m = k.output_metas[j];
    const Tensor* dying = k.reuse[j] >= 0 ? &slots[k.inputs[k.reuse[j]]] : nullptr;
    if (j < k.into.size() && k.into[j].cat_value >= 0) {
      // outs[j] stays empty, and so does the slot: the cat step knows the part is in place.
      out[j] = cat_slice(k.into[j], slots, &strides[(num_in + j) * rank]);
      continue;
    }
    outs[j] = dying && may_take_buffer(*dying, m) ? *dying : make_tensor(m.sizes, m.dtype);
    out[j] = outs[j].impl()->data_bytes();
  }
  k.fn(in.data(), out.data(), k.loop_sizes.data(), strides.data(), k.scalars.data());
  for (size_t j = 0; j < num_out; ++j)
    if (outs[j].defined()) slots[k.outputs[j]] = std::move(outs[j]);
  return true;
}

void run_group_unfused(const Program& p, const KernelCall& k, std::vector<Tensor>& slots) {
  for (uint32_t n : k.nodes) run_node_call(p.externs[n], slots);
  for (uint32_t n : k.nodes)
    for (uint32_t v : p.externs[n].outputs)
      if (std::find(k.outputs.begin(), k.outputs.end(), v) == k.outputs.end()) slots[v] = Tensor();
}

void run_gemm(const Program& p, const GemmCall& c, std::vector<Tensor>& slots) {
  const cpp::GemmFusion& f = c.fusion;
  kernels::GemmEpilogue e;
  if (f.bias >= 0) e.bias = slots[f.bias];
  e.activation = f.activation;
  if (f.residual >= 0) e.residual = slots[f.residual];
  e.residual_first = f.residual_first;
  Tensor out;
  if (f.conv) {
    CurrentOpScope scope("cpp.conv_epilogue");
    out = kernels::conv2d_epilogue(slots[f.a], slots[f.b], f.conv_params, e);
  } else {
    CurrentOpScope scope("cpp.gemm_epilogue");
    out = kernels::mm_epilogue(slots[f.a], slots[f.b], e, c.out_sizes);
  }
  if (out.defined()) {
    slots[f.output] = std::move(out);
    return;
  }
  for (uint32_t n : f.nodes) run_node_call(p.externs[n], slots);
  for (size_t i = 0; i + 1 < f.nodes.size(); ++i)
    for (uint32_t v : p.externs[f.nodes[i]].outputs) slots[v] = Tensor();
}

// An attention backward step with its paired forward (attention_pairs.h) when `forward_output`
// >= 0, writing the gradients that `into` places (empty: none) straight into their cats' results
// (cat_fusion.h): one call computing all of it. The other results go to their slots.
void run_attention(const NodeCall& backward, int64_t forward_output,
                   const std::vector<CatSlice>& into, std::vector<Tensor>& slots) {
  ops::OpArgs args = backward.args;
  fill_args(backward, slots, args);
  auto placed = [&](size_t i) { return i < into.size() && into[i].cat_value >= 0; };
  std::array<Tensor, 3> views;
  for (size_t i = 0; i < 3; ++i)
    if (placed(i))
      views[i] = cat_of(into[i], slots).as_strided(into[i].sizes, into[i].strides, into[i].offset);
  CurrentOpScope scope(forward_output >= 0 ? "cpp.attention_pair" : "cpp.attention_into_cat");
  std::vector<Tensor> r = forward_output >= 0 ? ops::masked_attention_with_backward(args, views)
                                              : ops::masked_attention_backward_into(args, views);
  for (size_t i = 0; i < backward.outputs.size(); ++i)
    if (!placed(i)) slots[backward.outputs[i]] = std::move(r[i]);
  if (forward_output >= 0) slots[forward_output] = std::move(r[3]);
}

std::string value_name(const graph::Graph& g, int64_t v) {
  return "%" + g.value(graph::ValueId{static_cast<uint32_t>(v)}).name;
}

// A fused product and its post-ops in the order they run, as the schedule text (with the
// residual's name) and the step profile (without) show it: "gemm aten.addmm.default + relu".
void describe_product(std::ostream& o, const graph::Graph& g, const cpp::GemmFusion& f,
                      bool residual_name) {
  static const char* activations[] = {"", " + relu"};
  const std::string residual =
      f.residual < 0 ? "" : " + residual" + (residual_name ? " " + value_name(g, f.residual) : "");
  o << (f.conv ? "conv " : "gemm ") << g.nodes()[f.nodes[0]].op->name
    << (f.residual_first ? residual : "") << activations[static_cast<int>(f.activation)]
    << (f.residual_first ? "" : residual);
}

void describe_cat(std::ostream& o, const graph::Graph& g, const cpp::CatFusion& c) {
  o << "cat -> " << value_name(g, c.output) << " (";
  for (size_t i = 0; i < c.parts.size(); ++i)
    o << (i ? ", " : "") << value_name(g, c.parts[i].value)
      << (c.parts[i].in_place() ? " in place" : " copied");
  o << ")";
}

// The comment block cpp_code starts with: the steps in run order.
std::string describe_steps(const graph::Graph& g, const cpp::Schedule& sched) {
  std::ostringstream o;
  o << "// cpp schedule of graph " << g.name() << ": " << sched.steps.size() << " steps\n";
  for (size_t i = 0; i < sched.steps.size(); ++i) {
    const cpp::Step& st = sched.steps[i];
    o << "//   " << i << ": ";
    if (st.is_gemm) {
      const cpp::GemmFusion& f = sched.gemms[st.index];
      describe_product(o, g, f, true);
      o << " (oneDNN post-ops) -> " << value_name(g, f.output);
    } else if (st.is_cat) {
      describe_cat(o, g, sched.cats[st.index]);
    } else if (st.is_kernel) {
      const cpp::Kernel& k = sched.kernels[st.index];
      o << k.name << " (" << k.nodes.size() + (k.reduction_node >= 0) << " nodes) ->";
      for (size_t j = 0; j < k.outputs.size(); ++j) {
        o << " " << value_name(g, k.outputs[j]);
        if (j < k.out_cat.size() && k.out_cat[j].cat >= 0)
          o << " (into " << value_name(g, sched.cats[k.out_cat[j].cat].output) << ")";
        if (j < k.reuse.size() && k.reuse[j] >= 0)
          o << " (in the buffer of " << value_name(g, k.inputs[k.reuse[j]].value) << ")";
      }
    } else {
      const graph::Node& n = g.nodes()[st.index];
      o << "extern " << n.op->name;
      if (st.attention_pair >= 0)
        o << " + " << g.nodes()[sched.attention_pairs[st.attention_pair].forward].op->name
          << " (one pass over the weights)";
      o << " ->";
      for (graph::ValueId v : n.outputs) {
        o << " " << value_name(g, v.index);
        for (const cpp::CatFusion& c : sched.cats)
          for (const cpp::CatPart& part : c.parts)
            if (part.attention == static_cast<int32_t>(st.index) &&
                n.outputs[part.attention_result] == v)
              o << " (into " << value_name(g, c.output) << ")";
      }
      if (st.attention_pair >= 0)
        for (graph::ValueId v : g.nodes()[sched.attention_pairs[st.attention_pair].forward].outputs)
          o << " " << value_name(g, v.index);
    }
    o << "\n";
  }
  return o.str();
}

bool is_product_op(std::string_view op) {
  return op == "aten.mm.default" || op == "aten.addmm.default" || op == "aten.bmm.default" ||
         op == "aten.baddbmm.default" || op == "aten.convolution.default" ||
         op == "aten.convolution_backward.default";
}

// A step's row in the step profile: graph, kind, ops, result shape.
std::string step_label(const graph::Graph& g, const cpp::Schedule& sched, const cpp::Step& st,
                       bool& product) {
  std::ostringstream o;
  o << g.name() << ": ";
  uint32_t result = 0;
  product = false;
  if (st.is_gemm) {
    const cpp::GemmFusion& f = sched.gemms[st.index];
    describe_product(o, g, f, false);
    result = f.output;
    product = true;
  } else if (st.is_cat) {
    o << "cat";
    result = sched.cats[st.index].output;
  } else if (st.is_kernel) {
    const cpp::Kernel& k = sched.kernels[st.index];
    o << "kernel";
    for (uint32_t n : k.nodes) o << " " << g.nodes()[n].op->name;
    if (k.reduction_node >= 0) o << " " << g.nodes()[k.reduction_node].op->name;
    if (k.outputs.empty()) return o.str();
    result = k.outputs[0];
  } else {
    const graph::Node& n = g.nodes()[st.index];
    o << "extern " << n.op->name;
    if (st.attention_pair >= 0) o << " + forward";
    product = is_product_op(n.op->name);
    if (n.outputs.empty()) return o.str();
    result = n.outputs[0].index;
  }
  o << " " << shape_to_string(g.value(graph::ValueId{result}).meta.sizes);
  return o.str();
}

std::string code_of(const graph::Graph& g, const cpp::Schedule& sched) {
  std::string code = describe_steps(g, sched);
  if (!sched.kernels.empty()) code += cpp::generate_source(g, sched);
  return code;
}

// The schedule of `g`, which pair_attention may first reorder (attention_pairs.h).
cpp::Schedule schedule_of(graph::Graph& g, const CppOptions& options) {
  std::vector<cpp::AttentionPair> pairs;
  if (options.attention_pairs) pairs = cpp::pair_attention(g);
  return cpp::schedule_graph(g, options.gemm_epilogues, options.cat_fusion, options.conv_epilogues,
                             std::move(pairs));
}

std::shared_ptr<LinkedProgram> build(const graph::Graph& traced, const CppOptions& options) {
  graph::Graph g = traced;  // its node order may change: the schedule's graph
  cpp::Schedule sched = schedule_of(g, options);
  auto p = std::make_shared<Program>();
  p->num_values = g.values().size();
  for (graph::ValueId v : g.inputs()) p->inputs.push_back(v.index);
  for (graph::ValueId v : g.outputs()) p->outputs.push_back(v.index);
  for (const graph::Node& n : g.nodes()) p->externs.push_back(make_node_call(g, n, "cpp"));
  Liveness live = cpp::plan_memory(g, sched, options.reuse_buffers);
  for (const cpp::GemmFusion& f : sched.gemms)
    p->gemms.push_back({f, g.value(graph::ValueId{f.output}).meta.sizes});
  std::optional<cpp::ObjectFuture> library;
  if (!sched.kernels.empty()) {
    std::string source = cpp::generate_source(g, sched);
    // Named after the function being compiled when there is one: FN_INDEX_cpp_forward_code.txt;
    // else cpp_forward_N_code.txt, N counting this process's such compiles so that graphs of one
    // name (every model's "forward") do not overwrite each other.
    static std::atomic<size_t> unscoped{0};
    const aot::CompilingScope* fn = aot::CompilingScope::current();
    aot::dump_text(fn ? fn->fn_name() : "cpp_" + g.name(), fn ? fn->index() : unscoped++,
                   fn ? "cpp_" + g.name() + "_code" : "code", describe_steps(g, sched) + source);
    library = cpp::start_shared_object(source);
  }
  for (const cpp::Kernel& k : sched.kernels) {
    KernelCall c;
    c.name = k.name;
    c.shape = k.shape;
    c.dim_groups = k.dim_groups;
    c.loop_sizes.assign(c.dim_groups.size(), 1);
    for (size_t d = 0; d < c.dim_groups.size(); ++d)
      for (int64_t dim : c.dim_groups[d]) c.loop_sizes[d] *= c.shape[dim];
    for (const cpp::KernelInput& in : k.inputs) {
      c.inputs.push_back(in.read_from);  // a folded expand's source, read with broadcast strides
      c.inner.push_back(in.inner);
      if (in.folded_node >= 0) c.nodes.push_back(static_cast<uint32_t>(in.folded_node));
    }
    c.outputs = k.outputs;
    for (uint32_t v : k.outputs) c.output_metas.push_back(g.value(graph::ValueId{v}).meta);
    c.scalars = k.scalars;
    c.nodes.insert(c.nodes.end(), k.nodes.begin(), k.nodes.end());  // after the folded expands
    c.reuse = k.reuse;
    for (const cpp::CatTarget& t : k.out_cat) {
      CatSlice& slice = c.into.emplace_back();
      if (t.cat < 0) continue;
      slice.cat_value = sched.cats[t.cat].output;
      slice.cat_meta = g.value(graph::ValueId{sched.cats[t.cat].output}).meta;
      slice.offset = t.offset;
      slice.strides = t.strides;
    }
    if (k.reduction_node >= 0) c.nodes.push_back(static_cast<uint32_t>(k.reduction_node));
    p->kernels.push_back(std::move(c));
  }
  p->cats = sched.cats;
  for (const cpp::CatFusion& c : sched.cats)
    p->cat_metas.push_back(g.value(graph::ValueId{c.output}).meta);
  p->free_at_start = std::move(live.free_at_start);
  for (size_t i = 0; i < sched.steps.size(); ++i) {
    const cpp::Step& st = sched.steps[i];
    Program::Step& step = p->steps.emplace_back();
    step.is_kernel = st.is_kernel;
    step.is_gemm = st.is_gemm;
    step.is_cat = st.is_cat;
    step.index = st.index;
    if (st.attention_pair >= 0)
      step.pair_output =
          g.nodes()[sched.attention_pairs[st.attention_pair].forward].outputs[0].index;
    for (const cpp::CatFusion& c : sched.cats)
      for (const cpp::CatPart& part : c.parts) {
        if (st.is_kernel || st.is_gemm || st.is_cat ||
            part.attention != static_cast<int32_t>(st.index))
          continue;
        step.into.resize(3);
        CatSlice& slice = step.into[static_cast<size_t>(part.attention_result)];
        slice.cat_value = c.output;
        slice.cat_meta = g.value(graph::ValueId{c.output}).meta;
        slice.offset = part.offset;
        slice.strides = part.strides;
        const graph::Node& n = g.nodes()[st.index];
        slice.sizes = g.value(n.outputs[static_cast<size_t>(part.attention_result)]).meta.sizes;
      }
    step.free_after = std::move(live.free_after[i]);
    step.label = step_label(g, sched, st, step.product);
  }
  return std::make_shared<LinkedProgram>(std::move(p), std::move(library));
}

// One call of a linked program.
std::vector<Tensor> run_program(const Program& prog, std::vector<Tensor>&& inputs) {
  ThreadLoan<Slots> loan;
  std::vector<Tensor>& slots = loan->values;
  slots.resize(prog.num_values);
  for (size_t i = 0; i < prog.inputs.size(); ++i) slots[prog.inputs[i]] = std::move(inputs[i]);
  inputs.clear();
  for (uint32_t v : prog.free_at_start) slots[v] = Tensor();
  const bool profile = cpp::step_profiling();
  for (const Program::Step& s : prog.steps) {
    const auto start =
        profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (s.is_gemm) {
      run_gemm(prog, prog.gemms[s.index], slots);
    } else if (s.is_cat) {
      run_cat(prog, s.index, slots);
    } else if (!s.into.empty() || s.pair_output >= 0) {
      run_attention(prog.externs[s.index], s.pair_output, s.into, slots);
    } else if (!s.is_kernel) {
      run_node_call(prog.externs[s.index], slots);
    } else if (!run_kernel(prog.kernels[s.index], slots)) {
      run_group_unfused(prog, prog.kernels[s.index], slots);
    }
    for (uint32_t v : s.free_after) slots[v] = Tensor();
    if (profile)
      cpp::add_step_time(
          s.label, s.product,
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
  }
  // The inputs' vector, emptied above, carries the results: one allocation fewer per call.
  std::vector<Tensor> result = std::move(inputs);
  result.reserve(prog.outputs.size());
  for (uint32_t v : prog.outputs) result.push_back(slots[v]);
  return result;
}

}  // namespace

CompiledGraph compile_cpp(const graph::Graph& g, const CppOptions& options) {
  std::shared_ptr<LinkedProgram> linked = build(g, options);
  auto signature = std::make_shared<const graph::Graph>(g);
  // Reentrant: the program is read-only once linked; the value slots belong to the call.
  if (linked->built()) {
    // Loaded from the cache or needing no kernels: linked now, and the calls skip the check
    // (measured: the per-call fw+bw of a tiny graph, build/aot_bench, took 1.92-1.94 us this way
    // and 2.00-2.02 us with every call going through LinkedProgram::get, alternating runs).
    try {
      std::shared_ptr<const Program> prog = linked->linked_program();
      return [prog, signature](std::vector<Tensor>&& inputs) {
        check_inputs(*signature, inputs);
        return run_program(*prog, std::move(inputs));
      };
    } catch (const std::exception&) {  // a build that failed already: thrown by every call below
    }
  }
  return [linked, signature](std::vector<Tensor>&& inputs) {
    check_inputs(*signature, inputs);
    return run_program(linked->get(), std::move(inputs));
  };
}

std::string cpp_code(const graph::Graph& traced, const CppOptions& options) {
  graph::Graph g = traced;
  cpp::Schedule sched = schedule_of(g, options);
  cpp::plan_memory(g, sched, options.reuse_buffers);
  return code_of(g, sched);
}

}  // namespace aotgrad::backends
