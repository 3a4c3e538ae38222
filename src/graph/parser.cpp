// Parser for the graph text format (docs/ir.md). Reading guide: Parser::parse follows the grammar
// top-down (signature, statements, return) over the tokens GraphLexer reads (parser_lexer.h).
// Arguments are read into Literals first and converted to NodeArgs only once the schema slot
// they fill is known (GraphLexer::convert), because a positional argument's slot depends on which
// arguments the call names. Every error goes through fail(), which turns a byte offset into
// "line L, column C".
//
// Hostile text: the parser is iterative except for nested list literals, whose depth is bounded
// (kMaxNesting); numbers are read with std::from_chars (out of range is an error, never UB); a
// type annotation's shape is checked to be addressable before anything sizes from it; every
// piece of the text echoed in a message goes through token() (escaped, truncated), and messages
// are cut to kMaxMessage characters.
#include "graph/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "graph/node_args.h"
#include "graph/parser_lexer.h"
#include "graph/verifier.h"
#include "tensor/message_text.h"

namespace aotgrad::graph {
namespace {

using parser_detail::GraphLexer;
using parser_detail::is_word_char;
using parser_detail::kMaxDims;
using parser_detail::kMaxNesting;
using parser_detail::Literal;
using parser_detail::literal_desc;
using parser_detail::token;

struct Binding {
  std::string name;
  size_t pos;
  ops::TensorMeta meta;
};

struct CallArg {
  std::string keyword;  // empty for a positional argument
  size_t pos;
  Literal value;
};

class Parser : private GraphLexer {
 public:
  Parser(std::string_view text, std::vector<SourceLocation>* node_locations)
      : GraphLexer(text), node_locations_(node_locations) {}

  Graph parse() {
    skip_space();
    size_t p = pos_;
    if (!is_word_char(peek()) || word() != "graph")
      fail(p, "expected 'graph' at the start of the text");
    skip_space();
    g_ = Graph(name());
    skip_space();
    expect('(', "after the graph name");
    signature();
    skip_space();
    expect('{', "after the signature");
    while (!statement()) {
    }
    skip_space();
    if (at_end()) fail(pos_, "missing '}' at the end of graph '" + token(g_.name()) + "'");
    expect('}', "after the return statement");
    skip_space();
    if (!at_end()) fail(pos_, "unexpected text after the closing '}' (one graph per text)");
    return std::move(g_);
  }

 private:
  // ---- grammar ----
  void signature() {
    skip_space();
    if (peek() == ')') {
      ++pos_;
      return;
    }
    while (true) {
      skip_space();
      Binding b = binding();
      check_new(b);
      Descriptor desc;
      bool more = entry_end(desc);
      define(b, g_.add_input(b.name, b.meta, std::move(desc)));
      if (!more) break;
    }
    skip_space();
    expect(')', "to close the signature");
  }

  // `%name: type`; checks that the name is new.
  Binding binding() {
    Binding b;
    b.pos = pos_;
    expect('%', "before a value name");
    b.name = name();
    if (b.name.empty()) fail(b.pos, "empty value name");
    skip_space();
    expect(':', "and a type annotation after %" + token(b.name));
    skip_space();
    b.meta = type_annotation();
    return b;
  }

  // Fails unless `b` names a value not defined yet (`pending`: names bound earlier in the same
  // statement, not yet in the graph).
  void check_new(const Binding& b, const std::unordered_set<std::string>& pending = {}) const {
    if (auto it = def_pos_.find(b.name); it != def_pos_.end())
      fail(b.pos, "redefinition of %" + token(b.name) + " (first defined at " +
                      location(it->second) + ")");
    if (pending.count(b.name))
      fail(b.pos, "redefinition of %" + token(b.name) + " in the same statement");
  }

  void define(const Binding& b, ValueId id) {
    def_pos_.emplace(b.name, b.pos);
    defined_[b.name] = id;
  }

  // dtype[sizes]{strides}@offset, the last two optional.
  ops::TensorMeta type_annotation() {
    size_t p = pos_;
    ops::TensorMeta m;
    if (!std::isalpha(static_cast<unsigned char>(peek())))
      fail(p, "bad type annotation: expected a dtype such as f32[2,3], found " + found_text());
    std::string dt = word();
    try {
      m.dtype = parse_dtype(dt);
    } catch (const std::invalid_argument&) {
      fail(p, "bad type annotation: unknown dtype '" + token(dt) +
                  "' (expected f32, f64, i64, i32, u8, b8, f16 or bf16)");
    }
    if (peek() != '[')
      fail(pos_, "bad type annotation: expected '[' and the sizes after " + token(dt));
    m.sizes = int_list(']', "sizes");
    for (int64_t s : m.sizes)
      if (s < 0) fail(p, "bad type annotation: negative size " + std::to_string(s));
    bool strided = peek() == '{';
    size_t sp = pos_;
    if (strided) {
      m.strides = int_list('}', "strides");
      if (m.strides.size() != m.sizes.size())
        fail(sp, "bad type annotation: " + std::to_string(m.sizes.size()) + " sizes but " +
                     std::to_string(m.strides.size()) + " strides");
      for (int64_t s : m.strides)
        if (s < 0) fail(sp, "bad type annotation: negative stride " + std::to_string(s));
    }
    if (peek() == '@') {
      ++pos_;
      m.storage_offset = integer();
      if (m.storage_offset < 0) fail(p, "bad type annotation: negative storage offset");
    }
    // Only an addressable geometry has contiguous strides, a numel and a fake storage size that
    // do not overflow.
    if (!is_addressable(m))
      fail(p, "bad type annotation: " + std::string(dtype_name(m.dtype)) + " shape with " +
                  std::to_string(m.sizes.size()) + " dims is too large to address in 64 bits");
    if (!strided) m.strides = contiguous_strides(m.sizes);
    return m;
  }

  // '[' or '{' int, int, ... close; spaces allowed inside; at most kMaxDims entries.
  IntList int_list(char close, const char* what) {
    size_t open = pos_++;
    IntList v;
    skip_space();
    if (peek() == close) {
      ++pos_;
      return v;
    }
    while (true) {
      skip_space();
      if (!(std::isdigit(static_cast<unsigned char>(peek())) || peek() == '-'))
        fail(pos_, std::string("bad type annotation: expected an integer in the ") + what +
                       ", found " + found_text());
      if (v.size() == kMaxDims)
        fail(open, "bad type annotation: more than " + std::to_string(kMaxDims) + " " + what);
      v.push_back(integer());
      skip_space();
      if (peek() == close) {
        ++pos_;
        return v;
      }
      if (peek() != ',')
        fail(pos_, std::string("bad type annotation: expected ',' or '") + close + "' in the " +
                       what + ", found " + found_text());
      ++pos_;
    }
  }

  // One statement; returns true after the return statement.
  bool statement() {
    skip_space();
    size_t start = pos_;
    if (at_end()) fail(pos_, "missing '}' at the end of graph '" + token(g_.name()) + "'");
    if (peek() == '}') fail(pos_, "graph '" + token(g_.name()) + "' has no return statement");
    std::vector<Binding> outs;
    if (peek() == '%') {
      std::unordered_set<std::string> pending;
      while (true) {
        outs.push_back(binding());
        check_new(outs.back(), pending);
        pending.insert(outs.back().name);
        skip_space();
        if (peek() != ',') break;
        ++pos_;
        skip_space();
      }
      expect('=', "after the results of a statement");
      skip_space();
    }
    size_t p = pos_;
    if (!std::isalpha(static_cast<unsigned char>(peek())))
      fail(p, "expected a statement (%result: type = op(...), or return (...)), found " +
                  found_text());
    std::string head = word();
    if (head == "return" && outs.empty()) {
      return_statement();
      return true;
    }
    call(head, p, outs);
    if (node_locations_) node_locations_->push_back(statement_location(start));
    return false;
  }

  // location() for statements, which come in text order: the line count carries over from the
  // previous statement, so recording every node's location stays linear in the text.
  SourceLocation statement_location(size_t pos) {
    for (; counted_ < pos; ++counted_)
      if (text_[counted_] == '\n') {
        ++counted_line_;
        counted_line_start_ = counted_ + 1;
      }
    return {counted_line_, pos - counted_line_start_ + 1};
  }

  void return_statement() {
    skip_space();
    expect('(', "after 'return'");
    skip_space();
    if (peek() == ')') {
      ++pos_;
      return;
    }
    while (true) {
      skip_space();
      size_t p = pos_;
      expect('%', "before a returned value");
      ValueId v = use(name(), p);
      Descriptor desc;
      bool more = entry_end(desc);
      g_.add_output(v, std::move(desc));
      if (!more) break;
    }
    skip_space();
    expect(')', "to close the return list");
  }

  ValueId use(const std::string& n, size_t p) const {
    auto it = defined_.find(n);
    if (it == defined_.end())
      fail(p, "unknown value %" + token(n) + " (not defined before this use)");
    return it->second;
  }

  const ops::OpDef& find_op(const std::string& opname, size_t p) const {
    if (const ops::OpDef* op = ops::find(opname)) return *op;
    std::string hint;
    for (const std::string& guess :
         {opname + ".default", "aten." + opname, "aten." + opname + ".default"})
      if (ops::find(guess)) hint = " (did you mean " + guess + "?)";
    fail(p, "unknown op '" + token(opname) + "'" + hint);
  }

  void call(const std::string& opname, size_t op_pos, const std::vector<Binding>& outs) {
    const ops::OpDef& op = find_op(opname, op_pos);
    const ops::Schema& schema = op.parsed_schema();
    skip_space();
    expect('(', "after the op name");
    std::vector<CallArg> given = call_args();
    std::vector<NodeArg> args = bind_args(op, op_pos, given);

    bool list_result = false;
    for (const ops::ArgSchema& r : schema.returns)
      list_result = list_result || r.type == ops::ArgType::tensor_list;
    if (!list_result && outs.size() != schema.returns.size())
      fail(outs.empty() ? op_pos : outs[0].pos,
           "arity mismatch: " + opname + " returns " + std::to_string(schema.returns.size()) +
               " value(s), the statement binds " + std::to_string(outs.size()));

    std::vector<ops::TensorMeta> metas;
    std::vector<std::string> names;
    for (const Binding& b : outs) {
      metas.push_back(b.meta);
      names.push_back(b.name);
    }
    std::vector<ValueId> ids = g_.add_node(op, std::move(args), metas, names);
    for (size_t i = 0; i < ids.size(); ++i) define(outs[i], ids[i]);
    node_origin(g_.mutable_nodes().back());
  }

  std::vector<CallArg> call_args() {
    std::vector<CallArg> given;
    skip_space();
    if (peek() == ')') {
      ++pos_;
      return given;
    }
    while (true) {
      skip_space();
      CallArg a;
      a.pos = pos_;
      if (std::isalpha(static_cast<unsigned char>(peek())) || peek() == '_') {
        std::string w = word();
        skip_space();
        if (peek() == '=') {
          ++pos_;
          skip_space();
          a.keyword = std::move(w);
        } else {
          pos_ = a.pos;
        }
      }
      a.value = literal();
      given.push_back(std::move(a));
      skip_space();
      if (peek() == ')') {
        ++pos_;
        return given;
      }
      expect(',', "or ')' between arguments");
    }
  }

  // Places named arguments by name and positional ones into the remaining slots in schema order,
  // then fills omitted ones with their defaults (ops::normalize semantics).
  std::vector<NodeArg> bind_args(const ops::OpDef& op, size_t op_pos,
                                 const std::vector<CallArg>& given) {
    const ops::Schema& schema = op.parsed_schema();
    std::vector<std::optional<NodeArg>> slots(schema.args.size());
    std::vector<bool> named(schema.args.size(), false);
    for (const CallArg& a : given) {
      if (a.keyword.empty()) continue;
      int idx = schema.find_arg(a.keyword);
      if (idx < 0)
        fail(a.pos, "unknown keyword argument '" + token(a.keyword) + "' for " +
                        std::string(op.name) + " (its arguments: " + arg_names(schema) + ")");
      if (named[idx]) fail(a.pos, "argument '" + token(a.keyword) + "' given twice");
      named[idx] = true;
      slots[idx] = convert(a.value, schema.args[idx], op);
    }
    size_t next = 0;
    for (const CallArg& a : given) {
      if (!a.keyword.empty()) continue;
      while (next < slots.size() && named[next]) ++next;
      if (next == slots.size())
        fail(a.pos, "arity mismatch: " + std::string(op.name) + " takes " +
                        std::to_string(schema.args.size()) + " argument(s) (" + arg_names(schema) +
                        "), " + std::to_string(given.size()) + " given");
      slots[next] = convert(a.value, schema.args[next], op);
      ++next;
    }
    std::vector<NodeArg> args;
    for (size_t i = 0; i < slots.size(); ++i) {
      if (!slots[i]) {
        slots[i] = default_arg(schema.args[i]);
        if (!slots[i])
          fail(op_pos, "arity mismatch: " + std::string(op.name) + " is missing argument '" +
                           schema.args[i].name + "' (" + schema_type_text(schema.args[i]) + ")");
      }
      args.push_back(std::move(*slots[i]));
    }
    return args;
  }

  // What an omitted argument takes (ops::parse_default_value, which also reads ATen's
  // scalar-written list defaults: `int[2] padding=0` is [0, 0]); nullopt when required.
  static std::optional<NodeArg> default_arg(const ops::ArgSchema& s) {
    if (!s.default_text) return schema_default(s);
    ops::DefaultValue d;
    try {
      d = ops::parse_default_value(s);
    } catch (const std::invalid_argument&) {
      return std::nullopt;
    }
    if (s.type == ops::ArgType::tensor_list) return NodeArg(ValueList{});
    return std::visit([](auto&& v) { return NodeArg(v); }, std::move(d));
  }

  static std::string arg_names(const ops::Schema& s) {
    std::string out;
    for (size_t i = 0; i < s.args.size(); ++i) out += (i ? ", " : "") + s.args[i].name;
    return out;
  }

  // One argument constant; `depth` counts the list brackets around it.
  Literal literal(int depth = 0) {
    Literal l;
    l.pos = pos_;
    char c = peek();
    if (c == '%') {
      ++pos_;
      l.kind = Literal::Kind::value;
      l.s = name();
      l.value = use(l.s, l.pos);
    } else if (c == '[') {
      if (depth == kMaxNesting)
        fail(pos_, "lists nested deeper than " + std::to_string(kMaxNesting) + " levels");
      ++pos_;
      l.kind = Literal::Kind::list;
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return l;
      }
      while (true) {
        skip_space();
        l.items.push_back(literal(depth + 1));
        skip_space();
        if (peek() == ']') {
          ++pos_;
          return l;
        }
        expect(',', "or ']' in a list");
      }
    } else if (c == '"') {
      l.kind = Literal::Kind::string;
      l.s = quoted_string();
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      number(l);
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      word_literal(l);
    } else {
      fail(pos_, "expected an argument, found " + found_text());
    }
    return l;
  }

  std::vector<SourceLocation>* node_locations_;
  size_t counted_ = 0, counted_line_ = 1, counted_line_start_ = 0;  // statement_location's cursor
  Graph g_;
  std::unordered_map<std::string, ValueId> defined_;
  std::unordered_map<std::string, size_t> def_pos_;  // where each name was defined, for errors
};

}  // namespace

Graph parse_graph(std::string_view text, std::vector<SourceLocation>* node_locations) {
  if (node_locations) node_locations->clear();
  return Parser(text, node_locations).parse();
}

}  // namespace aotgrad::graph
