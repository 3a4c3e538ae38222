// serialize_artifact / deserialize_artifact (aot/artifact.h; the format is docs/ir.md,
// "Artifacts").
//
// Reading guide: Writer and Reader are the two halves of one encoding — fixed-width little-endian
// integers, doubles as their IEEE bits, strings and lists with a u64 length first — and the
// functions below them come in pairs (write_x / read_x) in the order the fields appear. The
// Reader treats the bytes as hostile: every read is bounds-checked, every count is checked
// against the bytes left before anything is allocated, enums and bools must hold a valid value,
// and every failure is one ArtifactError line naming the field and the byte offset. Canonical
// forms only (bools 0 or 1, graphs as print_graph writes them), so that re-serializing an
// artifact that was read gives back the same bytes.
#include <cstring>
#include <limits>

#include "aot/artifact.h"
#include "graph/parser.h"
#include "graph/printer.h"
#include "graph/verifier.h"
#include "tensor/message_text.h"

namespace aotgrad::aot {
namespace {

constexpr char kMagic[8] = {'A', 'O', 'T', 'G', 'R', 'A', 'D', 'A'};
constexpr size_t kHeaderSize = 8 + 4 + 8 + 8;

uint64_t checksum(std::string_view body) {  // FNV-1a 64
  uint64_t h = 1469598103934665603ull;
  for (char c : body) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

// One line, at most ~300 characters.
[[noreturn]] void fail(const std::string& what) {
  // Pieces of the message may echo the input (names, graph text): escaped and bounded here.
  throw ArtifactError(escape_for_message("artifact: " + what, 300, /*keep_backslash=*/true));
}

class Writer {
 public:
  void u8(uint8_t v) { out_ += static_cast<char>(v); }
  void boolean(bool v) { u8(v ? 1 : 0); }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void i64(int64_t v) { u64(static_cast<uint64_t>(v)); }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    u64(bits);
  }
  void str(std::string_view s) {
    u64(s.size());
    out_.append(s.data(), s.size());
  }
  void ints(const IntList& v) {
    u64(v.size());
    for (int64_t x : v) i64(x);
  }
  void indices(const std::vector<size_t>& v) {
    u64(v.size());
    for (size_t x : v) u64(x);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(std::string_view body, size_t base) : in_(body), base_(base) {}

  uint8_t u8(const char* what) {
    need(1, what);
    return static_cast<uint8_t>(in_[pos_++]);
  }
  bool boolean(const char* what) {
    uint8_t v = u8(what);
    if (v > 1) bad(what, "a bool must be 0 or 1, found " + std::to_string(v));
    return v == 1;
  }
  uint64_t u64(const char* what) {
    need(8, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<uint8_t>(in_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return v;
  }
  int64_t i64(const char* what) { return static_cast<int64_t>(u64(what)); }
  size_t index(const char* what) {
    uint64_t v = u64(what);
    if (v > std::numeric_limits<uint32_t>::max())
      bad(what, "index " + std::to_string(v) + " out of range");
    return static_cast<size_t>(v);
  }
  double f64(const char* what) {
    uint64_t bits = u64(what);
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return v;
  }
  // A count of items each at least `min_item_bytes` long: never more than the bytes left.
  size_t count(const char* what, size_t min_item_bytes = 1) {
    uint64_t n = u64(what);
    if (n > (in_.size() - pos_) / min_item_bytes)
      bad(what, "count " + std::to_string(n) + " exceeds the bytes left (truncated or corrupt)");
    return static_cast<size_t>(n);
  }
  std::string str(const char* what) {
    size_t n = count(what);
    std::string s(in_.substr(pos_, n));
    pos_ += n;
    return s;
  }
  IntList ints(const char* what) {
    IntList v(count(what, 8));
    for (int64_t& x : v) x = i64(what);
    return v;
  }
  std::vector<size_t> indices(const char* what) {
    std::vector<size_t> v(count(what, 8));
    for (size_t& x : v) x = index(what);
    return v;
  }
  DType dtype(const char* what) {
    uint8_t v = u8(what);
    if (v > static_cast<uint8_t>(DType::bf16)) bad(what, "unknown dtype code " + std::to_string(v));
    return static_cast<DType>(v);
  }
  void finish() {
    if (pos_ != in_.size())
      bad("the end of the body", std::to_string(in_.size() - pos_) + " unread bytes remain");
  }
  [[noreturn]] void bad(const char* what, const std::string& why) const {
    fail(std::string(what) + " (byte " + std::to_string(base_ + pos_) + "): " + why);
  }

 private:
  void need(size_t n, const char* what) {
    if (in_.size() - pos_ < n) bad(what, "truncated: the body ends inside this field");
  }
  std::string_view in_;
  size_t pos_ = 0;
  size_t base_;  // offset of the body in the blob, for messages
};

// ---- config and guards ----

void write_config(Writer& w, const ArtifactConfig& c) {
  w.str(c.name);
  w.str(c.partitioner);
  w.f64(c.activation_memory_budget);
  w.boolean(c.keep_inference_input_mutations);
  w.str(c.fw_compiler);
  w.str(c.bw_compiler);
  w.str(c.inference_compiler);
  w.boolean(c.fuse_attention);
}

ArtifactConfig read_config(Reader& r) {
  ArtifactConfig c;
  c.name = r.str("config name");
  c.partitioner = r.str("config partitioner");
  c.activation_memory_budget = r.f64("config activation_memory_budget");
  c.keep_inference_input_mutations = r.boolean("config keep_inference_input_mutations");
  c.fw_compiler = r.str("config fw_compiler");
  c.bw_compiler = r.str("config bw_compiler");
  c.inference_compiler = r.str("config inference_compiler");
  c.fuse_attention = r.boolean("config fuse_attention");
  return c;
}

void write_plan(Writer& w, const InputPlan& p) {
  w.u64(p.inputs.size());
  for (const InputPlan::Entry& e : p.inputs) {
    w.u8(static_cast<uint8_t>(e.kind));
    w.u64(e.index);
  }
  w.u64(p.bases.size());
  for (const SyntheticBase& b : p.bases) {
    w.indices(b.members);
    w.boolean(b.common_base);
    w.ints(b.sizes);
    w.ints(b.strides);
    w.i64(b.storage_offset);
  }
  w.u64(p.graph_inputs.size());
  for (const InputPlan::GraphInput& g : p.graph_inputs) {
    w.boolean(g.is_base);
    w.u64(g.index);
  }
  w.u64(p.unmergeable.size());
  for (const InputPlan::Unmergeable& u : p.unmergeable) {
    w.indices(u.members);
    w.str(u.reason);
  }
  w.indices(p.same_base_as);
}

InputPlan read_plan(Reader& r) {
  InputPlan p;
  p.inputs.resize(r.count("plan inputs", 9));
  for (InputPlan::Entry& e : p.inputs) {
    uint8_t kind = r.u8("plan input kind");
    if (kind > static_cast<uint8_t>(InputPlan::Kind::member))
      r.bad("plan input kind", "unknown kind " + std::to_string(kind));
    e.kind = static_cast<InputPlan::Kind>(kind);
    e.index = r.index("plan input index");
  }
  p.bases.resize(r.count("plan bases", 9));
  for (SyntheticBase& b : p.bases) {
    b.members = r.indices("plan base members");
    b.common_base = r.boolean("plan base common_base");
    b.sizes = r.ints("plan base sizes");
    b.strides = r.ints("plan base strides");
    b.storage_offset = r.i64("plan base storage_offset");
  }
  p.graph_inputs.resize(r.count("plan graph inputs", 9));
  for (InputPlan::GraphInput& g : p.graph_inputs) {
    g.is_base = r.boolean("plan graph input is_base");
    g.index = r.index("plan graph input index");
  }
  p.unmergeable.resize(r.count("plan unmergeable groups", 16));
  for (InputPlan::Unmergeable& u : p.unmergeable) {
    u.members = r.indices("plan unmergeable members");
    u.reason = r.str("plan unmergeable reason");
  }
  p.same_base_as = r.indices("plan inputs sharing a _base");
  return p;
}

void write_guards(Writer& w, const Guards& g) {
  w.boolean(g.grad_mode);
  w.str(g.key_extra);
  w.u64(g.inputs.size());
  for (const InputGuard& in : g.inputs) {
    w.u8(static_cast<uint8_t>(in.dtype));
    w.ints(in.sizes);
    w.ints(in.strides);
    w.i64(in.storage_offset);
    w.boolean(in.requires_grad);
    w.boolean(in.leaf);
    w.u8(static_cast<uint8_t>(in.view));
  }
  write_plan(w, g.plan);
}

Guards read_guards(Reader& r) {
  Guards g;
  g.grad_mode = r.boolean("guards grad_mode");
  g.key_extra = r.str("guards key_extra");
  g.inputs.resize(r.count("guards inputs", 26));
  for (InputGuard& in : g.inputs) {
    in.dtype = r.dtype("input guard dtype");
    in.sizes = r.ints("input guard sizes");
    in.strides = r.ints("input guard strides");
    in.storage_offset = r.i64("input guard storage_offset");
    in.requires_grad = r.boolean("input guard requires_grad");
    in.leaf = r.boolean("input guard leaf");
    uint8_t view = r.u8("input guard view");
    if (view > static_cast<uint8_t>(CallerView::no_grad_mode_base_no_grad))
      r.bad("input guard view", "unknown view kind " + std::to_string(view));
    in.view = static_cast<CallerView>(view);
  }
  g.plan = read_plan(r);
  return g;
}

// ---- graphs ----

void write_graph(Writer& w, const graph::Graph& g, bool present) {
  w.str(present ? graph::print_graph(g) : std::string());
}

// The graph `text` of field `name`, checked as `source` asks (ArtifactError naming the field).
graph::Graph parse_field_graph(const std::string& text, const std::string& name,
                               ArtifactSource source) {
  const std::string field = name + " graph";
  graph::Graph g;
  try {
    g = graph::parse_graph(text);
    if (source == ArtifactSource::foreign) graph::verify_graph(g);
  } catch (const std::exception& e) {
    fail(field + ": " + e.what());
  }
  if (g.name() != name) fail(field + ": named '" + g.name().substr(0, 40) + "'");
  if (source == ArtifactSource::foreign && graph::print_graph(g) != text)
    fail(field + ": not in the canonical printed form");
  return g;
}

// A present graph is the text print_graph writes for it (from a foreign source: checked by
// printing it back, and verified), named `name`; an absent one is the empty string.
graph::Graph read_graph(Reader& r, const char* name, bool present, ArtifactSource source) {
  std::string field = std::string(name) + " graph";
  std::string text = r.str(field.c_str());
  if (!present) {
    if (!text.empty()) r.bad(field.c_str(), "must be empty in this kind of artifact");
    return graph::Graph(name);
  }
  return parse_field_graph(text, name, source);
}

// The joint graph: from this build's own cache it is parsed when first read (LazyGraph); a warm
// start never reads it. A foreign artifact's is checked now, as every other field.
LazyGraph read_joint(Reader& r, bool present, ArtifactSource source) {
  if (!present || source == ArtifactSource::foreign) return read_graph(r, "joint", present, source);
  std::string text = r.str("joint graph");
  return LazyGraph::deferred(std::move(text), [source](const std::string& t) {
    return parse_field_graph(t, "joint", source);
  });
}

// ---- view chains ----

enum class ArgTag : uint8_t {
  none,
  tensor,
  scalar,
  integer,
  floating,
  boolean,
  int_list,
  dtype,
  string
};

void write_args(Writer& w, const ops::OpArgs& args) {
  w.u64(args.size());
  for (const ops::Arg& a : args) {
    if (std::holds_alternative<std::monostate>(a)) {
      w.u8(uint8_t(ArgTag::none));
    } else if (const auto* t = std::get_if<Tensor>(&a)) {
      if (t->defined()) fail("cannot serialize a view step that holds a tensor");
      w.u8(uint8_t(ArgTag::tensor));
    } else if (const auto* s = std::get_if<Scalar>(&a)) {
      w.u8(uint8_t(ArgTag::scalar));
      w.u8(static_cast<uint8_t>(s->kind()));
      if (s->is_floating())
        w.f64(s->to_double());
      else
        w.i64(s->to_int());
    } else if (const auto* i = std::get_if<int64_t>(&a)) {
      w.u8(uint8_t(ArgTag::integer));
      w.i64(*i);
    } else if (const auto* d = std::get_if<double>(&a)) {
      w.u8(uint8_t(ArgTag::floating));
      w.f64(*d);
    } else if (const auto* b = std::get_if<bool>(&a)) {
      w.u8(uint8_t(ArgTag::boolean));
      w.boolean(*b);
    } else if (const auto* l = std::get_if<IntList>(&a)) {
      w.u8(uint8_t(ArgTag::int_list));
      w.ints(*l);
    } else if (const auto* dt = std::get_if<DType>(&a)) {
      w.u8(uint8_t(ArgTag::dtype));
      w.u8(static_cast<uint8_t>(*dt));
    } else if (const auto* str = std::get_if<std::string>(&a)) {
      w.u8(uint8_t(ArgTag::string));
      w.str(*str);
    } else {
      fail("cannot serialize a view step that holds a tensor list");
    }
  }
}

ops::Arg read_scalar(Reader& r) {
  uint8_t kind = r.u8("view step scalar kind");
  switch (static_cast<Scalar::Kind>(kind)) {
    case Scalar::Kind::floating:
      return Scalar(r.f64("view step scalar"));
    case Scalar::Kind::integer:
      return Scalar(r.i64("view step scalar"));
    case Scalar::Kind::boolean: {
      int64_t v = r.i64("view step scalar");
      if (v != 0 && v != 1) r.bad("view step scalar", "a bool scalar must be 0 or 1");
      return Scalar(v == 1);
    }
  }
  r.bad("view step scalar kind", "unknown kind " + std::to_string(kind));
}

ops::OpArgs read_args(Reader& r) {
  ops::OpArgs args(r.count("view step arguments"));
  for (ops::Arg& a : args) {
    uint8_t tag = r.u8("view step argument tag");
    switch (static_cast<ArgTag>(tag)) {
      case ArgTag::none:
        a = std::monostate{};
        break;
      case ArgTag::tensor:
        a = Tensor();
        break;
      case ArgTag::scalar:
        a = read_scalar(r);
        break;
      case ArgTag::integer:
        a = r.i64("view step int");
        break;
      case ArgTag::floating:
        a = r.f64("view step float");
        break;
      case ArgTag::boolean:
        a = r.boolean("view step bool");
        break;
      case ArgTag::int_list:
        a = r.ints("view step int list");
        break;
      case ArgTag::dtype:
        a = r.dtype("view step dtype");
        break;
      case ArgTag::string:
        a = r.str("view step string");
        break;
      default:
        r.bad("view step argument tag", "unknown tag " + std::to_string(tag));
    }
  }
  return args;
}

void write_chain(Writer& w, const std::vector<ViewReplayStep>& chain) {
  w.u64(chain.size());
  for (const ViewReplayStep& s : chain) {
    w.str(s.op);
    write_args(w, s.args);
    w.boolean(s.grad_mode);
    w.str(s.piece_of);
    write_args(w, s.piece_args);
    w.u64(s.piece);
    w.u64(s.piece_group);
    w.boolean(s.written_after);
    w.boolean(s.plain);
  }
}

std::vector<ViewReplayStep> read_chain(Reader& r) {
  std::vector<ViewReplayStep> chain(r.count("view chain", 36));
  for (ViewReplayStep& s : chain) {
    s.op = r.str("view step op");
    s.args = read_args(r);
    s.grad_mode = r.boolean("view step grad_mode");
    s.piece_of = r.str("view step piece_of");
    s.piece_args = read_args(r);
    s.piece = r.index("view step piece");
    s.piece_group = r.index("view step piece_group");
    s.written_after = r.boolean("view step written_after");
    s.plain = r.boolean("view step plain");
  }
  return chain;
}

// ---- ViewAndMutationMeta ----

void write_meta(Writer& w, const ViewAndMutationMeta& m) {
  w.u64(m.input_info.size());
  for (const InputAliasInfo& i : m.input_info)
    for (bool b : {i.is_leaf, i.requires_grad, i.mutates_data, i.mutates_metadata,
                   i.mutations_hidden_from_autograd, i.mutations_under_no_grad, i.keep_in_graph,
                   i.read_in_place})
      w.boolean(b);
  w.u64(m.output_info.size());
  for (const OutputAliasInfo& o : m.output_info) {
    w.u8(static_cast<uint8_t>(o.type));
    w.i64(o.base);
    w.i64(o.graph_output);
    w.boolean(o.requires_grad);
    write_chain(w, o.view_chain);
    w.boolean(o.requires_grad_set_inside);
    w.i64(o.history_base);
    w.i64(o.history_step);
    w.boolean(o.made_after_metadata_mutation);
    w.i64(o.own_views_of_input);
    w.i64(o.own_views_from);
    w.boolean(o.own_views_start_made_before);
    w.ints(o.start_sizes);
    w.ints(o.start_strides);
    w.i64(o.start_storage_offset);
    w.i64(o.same_as);
    w.i64(o.from_input);
    w.i64(o.from_input_step);
  }
  w.indices(m.mutated_inputs);
  w.u64(m.metadata_mutations.size());
  for (const MetadataMutation& mm : m.metadata_mutations) {
    w.u64(mm.input);
    w.boolean(mm.changed);
    w.ints(mm.sizes);
    w.ints(mm.strides);
    w.i64(mm.storage_offset);
    w.boolean(mm.under_grad);
    w.boolean(mm.written_in_other_geometry);
    w.ints(mm.written_sizes);
    w.ints(mm.written_strides);
    w.i64(mm.written_storage_offset);
    w.u64(mm.runs.size());
    for (const MetadataMutation::Run& run : mm.runs) {
      w.ints(run.sizes);
      w.ints(run.strides);
      w.i64(run.storage_offset);
      w.boolean(run.under_grad);
    }
  }
  w.u64(m.input_requires_grad_changes.size());
  for (const RequiresGradChange& c : m.input_requires_grad_changes) {
    w.u64(c.input);
    w.boolean(c.requires_grad);
  }
  w.u64(m.num_user_graph_outputs);
  w.u64(m.num_intermediate_bases);
  w.boolean(m.keep_input_mutations);
}

int read_small_int(Reader& r, const char* what) {
  int64_t v = r.i64(what);
  if (v < -1 || v > std::numeric_limits<int32_t>::max())
    r.bad(what, std::to_string(v) + " out of range");
  return static_cast<int>(v);
}

ViewAndMutationMeta read_meta(Reader& r) {
  ViewAndMutationMeta m;
  m.input_info.resize(r.count("meta input_info", 8));
  for (InputAliasInfo& i : m.input_info)
    for (bool* b : {&i.is_leaf, &i.requires_grad, &i.mutates_data, &i.mutates_metadata,
                    &i.mutations_hidden_from_autograd, &i.mutations_under_no_grad, &i.keep_in_graph,
                    &i.read_in_place})
      *b = r.boolean("meta input_info flag");
  m.output_info.resize(r.count("meta output_info", 53));
  for (OutputAliasInfo& o : m.output_info) {
    uint8_t type = r.u8("meta output type");
    if (type > static_cast<uint8_t>(OutputType::unsafe_view_alias))
      r.bad("meta output type", "unknown output type " + std::to_string(type));
    o.type = static_cast<OutputType>(type);
    o.base = read_small_int(r, "meta output base");
    o.graph_output = read_small_int(r, "meta output graph_output");
    o.requires_grad = r.boolean("meta output requires_grad");
    o.view_chain = read_chain(r);
    o.requires_grad_set_inside = r.boolean("meta output requires_grad_set_inside");
    o.history_base = read_small_int(r, "meta output history_base");
    o.history_step = read_small_int(r, "meta output history_step");
    o.made_after_metadata_mutation = r.boolean("meta output made_after_metadata_mutation");
    o.own_views_of_input = read_small_int(r, "meta output own_views_of_input");
    o.own_views_from = read_small_int(r, "meta output own_views_from");
    o.own_views_start_made_before = r.boolean("meta output own_views_start_made_before");
    o.start_sizes = r.ints("meta output start_sizes");
    o.start_strides = r.ints("meta output start_strides");
    o.start_storage_offset = r.i64("meta output start_storage_offset");
    o.same_as = read_small_int(r, "meta output same_as");
    o.from_input = read_small_int(r, "meta output from_input");
    o.from_input_step = read_small_int(r, "meta output from_input_step");
  }
  m.mutated_inputs = r.indices("meta mutated_inputs");
  m.metadata_mutations.resize(r.count("meta metadata_mutations", 59));
  for (MetadataMutation& mm : m.metadata_mutations) {
    mm.input = r.index("metadata mutation input");
    mm.changed = r.boolean("metadata mutation changed");
    mm.sizes = r.ints("metadata mutation sizes");
    mm.strides = r.ints("metadata mutation strides");
    mm.storage_offset = r.i64("metadata mutation storage_offset");
    mm.under_grad = r.boolean("metadata mutation under_grad");
    mm.written_in_other_geometry = r.boolean("metadata mutation written_in_other_geometry");
    mm.written_sizes = r.ints("metadata mutation written_sizes");
    mm.written_strides = r.ints("metadata mutation written_strides");
    mm.written_storage_offset = r.i64("metadata mutation written_storage_offset");
    mm.runs.resize(r.count("metadata mutation runs", 17));
    for (MetadataMutation::Run& run : mm.runs) {
      run.sizes = r.ints("metadata mutation run sizes");
      run.strides = r.ints("metadata mutation run strides");
      run.storage_offset = r.i64("metadata mutation run storage_offset");
      run.under_grad = r.boolean("metadata mutation run under_grad");
    }
  }
  m.input_requires_grad_changes.resize(r.count("meta requires_grad changes", 9));
  for (RequiresGradChange& c : m.input_requires_grad_changes) {
    c.input = r.index("requires_grad change input");
    c.requires_grad = r.boolean("requires_grad change flag");
  }
  m.num_user_graph_outputs = r.index("meta num_user_graph_outputs");
  m.num_intermediate_bases = r.index("meta num_intermediate_bases");
  m.keep_input_mutations = r.boolean("meta keep_input_mutations");
  return m;
}

// ---- saved values ----

void write_saved(Writer& w, const std::vector<partition::SavedValue>& saved) {
  w.u64(saved.size());
  for (const partition::SavedValue& s : saved) {
    w.str(s.name);
    w.str(s.producer);
    w.u8(static_cast<uint8_t>(s.meta.dtype));
    w.ints(s.meta.sizes);
    w.ints(s.meta.strides);
    w.i64(s.meta.storage_offset);
    w.u64(s.bytes);
    w.str(s.reason);
    w.i64(s.primal_index);
    w.i64(s.view_of_primal);
  }
}

std::vector<partition::SavedValue> read_saved(Reader& r) {
  std::vector<partition::SavedValue> saved(r.count("saved values", 65));
  for (partition::SavedValue& s : saved) {
    s.name = r.str("saved value name");
    s.producer = r.str("saved value producer");
    s.meta.dtype = r.dtype("saved value dtype");
    s.meta.sizes = r.ints("saved value sizes");
    s.meta.strides = r.ints("saved value strides");
    s.meta.storage_offset = r.i64("saved value storage_offset");
    s.bytes = r.u64("saved value bytes");
    s.reason = r.str("saved value reason");
    s.primal_index = read_small_int(r, "saved value primal_index");
    s.view_of_primal = read_small_int(r, "saved value view_of_primal");
  }
  return saved;
}

void write_body(Writer& w, const Artifact& a) {
  write_config(w, a.config);
  write_guards(w, a.guards);
  w.boolean(a.is_inference);
  write_graph(w, a.forward, !a.is_inference);
  write_graph(w, a.backward, !a.is_inference);
  write_graph(w, a.joint.get(), !a.is_inference);
  write_graph(w, a.inference, a.is_inference);
  write_meta(w, a.meta);
  w.indices(a.tangent_of_output);
  w.indices(a.grad_of_primal);
  write_saved(w, a.saved);
  w.str(a.backward_error);
}

Artifact read_body(Reader& r, ArtifactSource source) {
  Artifact a;
  a.config = read_config(r);
  a.guards = read_guards(r);
  a.is_inference = r.boolean("is_inference");
  a.forward = read_graph(r, "forward", !a.is_inference, source);
  a.backward = read_graph(r, "backward", !a.is_inference, source);
  a.joint = read_joint(r, !a.is_inference, source);
  a.inference = read_graph(r, "inference", a.is_inference, source);
  a.meta = read_meta(r);
  a.tangent_of_output = r.indices("tangent_of_output");
  a.grad_of_primal = r.indices("grad_of_primal");
  a.saved = read_saved(r);
  a.backward_error = r.str("backward_error");
  r.finish();
  return a;
}

void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s += static_cast<char>(v >> (8 * i));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s += static_cast<char>(v >> (8 * i));
}
uint64_t get_le(std::string_view s, size_t pos, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(static_cast<uint8_t>(s[pos + i])) << (8 * i);
  return v;
}

}  // namespace

std::string serialize_artifact(const Artifact& a) {
  Writer w;
  write_body(w, a);
  std::string body = w.take();
  std::string out(kMagic, sizeof kMagic);
  put_u32(out, kArtifactFormatVersion);
  put_u64(out, body.size());
  put_u64(out, checksum(body));
  return out + body;
}

Artifact deserialize_artifact(std::string_view bytes, ArtifactSource source) {
  if (bytes.size() < kHeaderSize || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    if (bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0)
      fail("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the " +
           std::to_string(kHeaderSize) + "-byte header");
    fail("not an aotgrad artifact (it does not start with the bytes \"AOTGRADA\")");
  }
  uint64_t version = get_le(bytes, 8, 4);
  if (version != kArtifactFormatVersion)
    fail("format version " + std::to_string(version) + " is not the version this build reads (" +
         std::to_string(kArtifactFormatVersion) +
         "); compile the function again to make a new one");
  uint64_t size = get_le(bytes, 12, 8);
  if (size != bytes.size() - kHeaderSize)
    fail((size > bytes.size() - kHeaderSize ? "truncated: " : "corrupt: ") +
         std::string("the header says the body has ") + std::to_string(size) + " bytes, found " +
         std::to_string(bytes.size() - kHeaderSize));
  std::string_view body = bytes.substr(kHeaderSize);
  if (get_le(bytes, 20, 8) != checksum(body))
    fail("corrupt: the checksum does not match the body (a changed or damaged file)");
  Reader r(body, kHeaderSize);
  Artifact a = read_body(r, source);
  validate_artifact(a);
  return a;
}

}  // namespace aotgrad::aot
