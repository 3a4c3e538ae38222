// Effectful ops and their token-threaded form.
//
// aotgrad.print(Tensor x, str fmt) -> () writes one line to a mutex-guarded sink
// (take_printed). aotgrad.with_effects(Tensor token, str op, Tensor[] tensors, str attrs) ->
// Tensor[] is how a trace records any effectful call: it runs `op` on its Tensor arguments
// (`tensors`, in order) and its other arguments (`attrs`, one entry per schema argument:
// "T" a tensor slot, "N" None, "i:<int>", "f:<float>", "b:0|1", "d:<dtype>", "l:<ints>",
// "s:<length>:<chars>", separated by ';'), and returns the next token followed by the op's
// results. The token orders effectful nodes by data dependence; Recompute::effectful keeps DCE,
// CSE and the partitioners away from them.
#include "ops/effects.h"

#include <cstdio>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "aotgrad/effects.h"
#include "aotgrad/ops.h"
#include "ops/families.h"
#include "ops/row_helpers.h"

namespace aotgrad::ops {
namespace {

constexpr std::string_view kWithEffects = "aotgrad.with_effects.default";

struct Sink {
  std::mutex mu;
  std::vector<std::string> lines;
};
Sink& sink() {
  static Sink s;
  return s;
}

std::string format_values(const Tensor& x) {
  Tensor v = to(contiguous(x.detach()), DType::f64);
  std::string out = "[";
  int64_t k = 0;
  for (double d : v.to_vector<double>()) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    out += (k++ ? ", " : "") + std::string(buf);
  }
  return out + "]";
}

std::vector<TensorMeta> print_meta(const OpArgs& a) {
  tensor_arg(a, 0);
  string_arg(a, 1);
  return {};
}
std::vector<Tensor> print_kernel(const OpArgs& a) {
  const std::string& fmt = string_arg(a, 1);
  const std::string values = format_values(tensor_arg(a, 0));
  std::string line;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt.compare(i, 2, "{}") == 0) {
      line += values;
      ++i;
    } else {
      line += fmt[i];
    }
  }
  Sink& s = sink();
  std::lock_guard<std::mutex> lock(s.mu);
  s.lines.push_back(std::move(line));
  return {};
}

// ---- the attrs codec ----

std::string encode_attr(std::string_view op, const Arg& a) {
  if (std::holds_alternative<Tensor>(a)) return "T";
  if (std::holds_alternative<std::monostate>(a)) return "N";
  if (auto* v = std::get_if<int64_t>(&a)) return "i:" + std::to_string(*v);
  if (auto* v = std::get_if<bool>(&a)) return std::string("b:") + (*v ? "1" : "0");
  if (auto* v = std::get_if<DType>(&a)) return "d:" + std::string(dtype_name(*v));
  if (auto* v = std::get_if<double>(&a)) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.17g", *v);
    return "f:" + std::string(buf);
  }
  if (auto* v = std::get_if<IntList>(&a)) {
    std::string s = "l:";
    for (size_t i = 0; i < v->size(); ++i) s += (i ? "," : "") + std::to_string((*v)[i]);
    return s;
  }
  if (auto* v = std::get_if<std::string>(&a)) return "s:" + std::to_string(v->size()) + ":" + *v;
  fail(op, "an effectful op's Tensor[] and Scalar arguments cannot be traced yet");
}

[[noreturn]] void bad_attrs(const std::string& attrs) {
  fail(kWithEffects, "malformed attrs '" + attrs.substr(0, 80) + "'");
}

int64_t parse_int(std::string_view s, const std::string& attrs) {
  try {
    size_t used = 0;
    int64_t v = std::stoll(std::string(s), &used);
    if (used != s.size()) bad_attrs(attrs);
    return v;
  } catch (const std::logic_error&) {
    bad_attrs(attrs);
  }
}

// The effectful op and its full OpArgs from a with_effects node's arguments.
std::pair<const OpDef*, OpArgs> decode(const OpArgs& a) {
  const OpDef& op = lookup(string_arg(a, 1));
  const TensorList& tensors = tensor_list_arg(a, 2);
  const std::string& attrs = string_arg(a, 3);
  OpArgs out;
  size_t pos = 0, next_tensor = 0;
  while (pos < attrs.size()) {
    const char kind = attrs[pos];
    size_t end = attrs.find(';', pos);
    if (kind == 's') {  // s:<len>:<chars> may contain ';'
      size_t colon = attrs.find(':', pos + 2);
      if (colon == std::string::npos) bad_attrs(attrs);
      int64_t len = parse_int(std::string_view(attrs).substr(pos + 2, colon - pos - 2), attrs);
      if (len < 0 || colon + 1 + static_cast<size_t>(len) > attrs.size()) bad_attrs(attrs);
      out.emplace_back(attrs.substr(colon + 1, static_cast<size_t>(len)));
      end = colon + 1 + static_cast<size_t>(len);
    } else {
      if (end == std::string::npos) end = attrs.size();
      std::string_view body = std::string_view(attrs).substr(pos, end - pos);
      std::string_view value = body.size() > 2 ? body.substr(2) : std::string_view();
      if (body == "T") {
        if (next_tensor >= tensors.size()) bad_attrs(attrs);
        out.emplace_back(tensors[next_tensor++]);
      } else if (body == "N") {
        out.emplace_back(std::monostate{});
      } else if (kind == 'i') {
        out.emplace_back(parse_int(value, attrs));
      } else if (kind == 'b') {
        out.emplace_back(value == "1");
      } else if (kind == 'd') {
        out.emplace_back(parse_dtype(value));
      } else if (kind == 'f') {
        out.emplace_back(std::stod(std::string(value)));
      } else if (kind == 'l') {
        IntList l;
        for (size_t p = 0; p < value.size();) {
          size_t comma = value.find(',', p);
          if (comma == std::string_view::npos) comma = value.size();
          l.push_back(parse_int(value.substr(p, comma - p), attrs));
          p = comma + 1;
        }
        out.emplace_back(std::move(l));
      } else {
        bad_attrs(attrs);
      }
    }
    if (end < attrs.size() && attrs[end] != ';') bad_attrs(attrs);
    pos = end + 1;
  }
  if (next_tensor != tensors.size()) bad_attrs(attrs);
  normalize(op, out);
  return {&op, std::move(out)};
}

TensorMeta token_meta() {
  return TensorMeta::contiguous({0}, DType::f32);
}

std::vector<TensorMeta> with_effects_meta(const OpArgs& a) {
  tensor_arg(a, 0);
  auto [op, args] = decode(a);
  std::vector<TensorMeta> metas = op->meta(args);
  metas.insert(metas.begin(), token_meta());
  return metas;
}
std::vector<Tensor> with_effects_kernel(const OpArgs& a) {
  auto [op, args] = decode(a);
  std::vector<Tensor> outs = op->kernel(args);
  outs.insert(outs.begin(), make_tensor({0}, DType::f32));
  return outs;
}

const OpDef kRows[] = {
    {.name = "aotgrad.print.default",
     .schema = "print(Tensor x, str fmt) -> ()",
     .meta = print_meta,
     .kernel = print_kernel,
     .recompute = Recompute::effectful,
     .effectful = true},
    {.name = kWithEffects,
     .schema = "with_effects(Tensor token, str op, Tensor[] tensors, str attrs) -> Tensor[]",
     .meta = with_effects_meta,
     .kernel = with_effects_kernel,
     .recompute = Recompute::effectful},
};

}  // namespace

bool is_effectful(const OpDef& op) {
  return op.effectful && !op.is_inplace();
}

OpArgs with_effects_args(const OpDef& op, const OpArgs& args, const Tensor& token) {
  TensorList tensors;
  std::string attrs;
  for (size_t i = 0; i < args.size(); ++i) {
    if (const Tensor* t = std::get_if<Tensor>(&args[i])) tensors.push_back(*t);
    attrs += (i ? ";" : "") + encode_attr(op.name, args[i]);
  }
  return {token, std::string(op.name), std::move(tensors), std::move(attrs)};
}

std::span<const OpDef> effect_ops() {
  return kRows;
}

}  // namespace aotgrad::ops

namespace aotgrad {

void print(const Tensor& x, const std::string& fmt) {
  static const ops::OpDef& def = ops::lookup("aotgrad.print.default");
  ops::dispatch(def, {x, fmt});
}

std::vector<std::string> take_printed() {
  ops::Sink& s = ops::sink();
  std::lock_guard<std::mutex> lock(s.mu);
  return std::exchange(s.lines, {});
}

}  // namespace aotgrad
