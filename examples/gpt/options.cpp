#include "options.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <limits>
#include <string_view>

namespace gpt {
namespace {

// The flag text as given, with non-printable bytes escaped and long values cut, for messages.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 60)) {
    auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  return s.size() > 60 ? out + "..." : out;
}

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

struct Flag {
  const char* name;
  // Stores the value; returns an error message (without the program prefix) or "".
  std::function<std::string(Options&, std::string_view)> set;
};

Flag int_flag(const char* name, int64_t Options::*field, int64_t lo, int64_t hi) {
  return {name, [=](Options& o, std::string_view v) -> std::string {
            auto n = parse_int(v);
            if (!n || *n < lo || *n > hi)
              return std::string(name) + " expects an integer from " + std::to_string(lo) + " to " +
                     std::to_string(hi) + ", got '" + shown(v) + "'";
            o.*field = *n;
            return "";
          }};
}

Flag real_flag(const char* name, double Options::*field, double lo, double hi) {
  return {name, [=](Options& o, std::string_view v) -> std::string {
            auto x = parse_double(v);
            if (!x || *x <= lo || *x > hi)
              return std::string(name) + " expects a number in (" + shown(std::to_string(lo)) +
                     ", " + shown(std::to_string(hi)) + "], got '" + shown(v) + "'";
            o.*field = *x;
            return "";
          }};
}

Flag path_flag(const char* name, std::function<void(Options&, std::string)> store) {
  return {name, [=](Options& o, std::string_view v) -> std::string {
            if (v.empty()) return std::string(name) + " expects a path, got an empty string";
            store(o, std::string(v));
            return "";
          }};
}

const std::vector<Flag>& flags() {
  static const std::vector<Flag> table = {
      path_flag("--data", [](Options& o, std::string v) { o.data = std::move(v); }),
      path_flag("--resume", [](Options& o, std::string v) { o.resume = std::move(v); }),
      path_flag("--out", [](Options& o, std::string v) { o.out_dir = std::move(v); }),
      int_flag("--steps", &Options::steps, 1, 10'000'000),
      int_flag("--stop-after", &Options::stop_after, 1, 10'000'000),
      int_flag("--batch", &Options::batch, 1, 4096),
      int_flag("--block", &Options::block, 2, 4096),
      int_flag("--layers", &Options::layers, 1, 64),
      int_flag("--heads", &Options::heads, 1, 64),
      int_flag("--embd", &Options::embd, 1, 4096),
      real_flag("--lr", &Options::lr, 0.0, 1.0),
      int_flag("--eval-every", &Options::eval_every, 1, 10'000'000),
      int_flag("--eval-batches", &Options::eval_batches, 1, 1000),
      int_flag("--compare-steps", &Options::compare_steps, 0, 1000),
      int_flag("--sample-lines", &Options::sample_lines, 0, 1000),
      real_flag("--temperature", &Options::temperature, 0.0, 10.0),
      int_flag("--top-k", &Options::top_k, 1, 256),
      {"--seed",
       [](Options& o, std::string_view v) -> std::string {
         auto n = parse_int(v);
         if (!n || *n < 0) return "--seed expects a non-negative integer, got '" + shown(v) + "'";
         o.seed = static_cast<uint64_t>(*n);
         return "";
       }},
      int_flag("--threads", &Options::threads, 1, 1024),
      {"--time-limit",
       [](Options& o, std::string_view v) -> std::string {
         auto x = parse_double(v);
         if (!x || *x < 0 || *x > 1e7)
           return "--time-limit expects seconds from 0 (no limit) to 10000000, got '" + shown(v) +
                  "'";
         o.time_limit = *x;
         return "";
       }},
  };
  return table;
}

// Checks that hold between flags.
std::string check_combination(const Options& o) {
  if (o.embd % o.heads != 0)
    return "--embd " + std::to_string(o.embd) + " must be a multiple of --heads " +
           std::to_string(o.heads);
  if (o.batch * o.block > (1 << 20))
    return "--batch x --block is " + std::to_string(o.batch * o.block) +
           " tokens per step; at most 1048576";
  return "";
}

}  // namespace

ParseResult parse_options(const std::vector<std::string>& args) {
  ParseResult r;
  auto fail = [&](const std::string& m) {
    r.error = "aotgrad-gpt: " + m + " (see aotgrad-gpt --help)";
    return r;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--help" || arg == "-h") {
      r.options.help = true;
      return r;
    }
    if (arg == "--no-progress" || arg == "--no-png") {
      (arg == "--no-png" ? r.options.png : r.options.progress) = false;
      continue;
    }
    std::string_view name = arg, value;
    bool inline_value = false;
    if (size_t eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const Flag* flag = nullptr;
    for (const Flag& f : flags())
      if (name == f.name) flag = &f;
    if (!flag) {
      if (arg.rfind("-", 0) == 0) return fail("unknown flag '" + shown(name) + "'");
      return fail("unexpected argument '" + shown(arg) +
                  "' (the corpus is given with --data FILE)");
    }
    if (!inline_value) {
      if (i + 1 >= args.size()) return fail(std::string(flag->name) + " needs a value");
      value = args[++i];
    }
    if (std::string m = flag->set(r.options, value); !m.empty()) return fail(m);
  }
  if (std::string m = check_combination(r.options); !m.empty()) return fail(m);
  return r;
}

std::string usage_text() {
  return R"(usage: aotgrad-gpt [flags]

Trains a character-level GPT with a compiled training step (aot_module, min_cut partitioner),
prints held-out loss as it goes, samples text from it, and writes a loss plot and a
safetensors checkpoint to --out.

data and output
  --data FILE          text to train on (default: the license texts in /usr/share/common-licenses)
  --out DIR            where the checkpoint and the plot go (default aotgrad-gpt-out)
  --resume FILE        continue from a checkpoint (its model size and vocabulary win)
model
  --layers N           transformer blocks (default 2)
  --heads N            attention heads (default 4)
  --embd N             embedding width, a multiple of --heads (default 128)
  --block N            context length in characters (default 64)
training
  --steps N            total optimizer steps (default 1000)
  --time-limit S       train for at most S seconds (default 90; 0: no limit); the learning-rate
                       schedule ends at --steps or S, whichever comes first
  --stop-after N       stop after N steps of this run and checkpoint; the learning-rate
                       schedule still spans --steps, so --resume continues it exactly
                       (with --time-limit 0)
  --batch N            sequences per step (default 16)
  --lr X               peak AdamW learning rate, warmup then cosine decay (default 0.003)
  --eval-every N       held-out loss and a checkpoint every N steps (default 100)
  --eval-batches N     batches per held-out estimate (default 8)
  --seed N             seed for weights, batches and samples (default 1337)
  --threads N          OpenMP threads (default: OMP_NUM_THREADS, else 1)
  --no-progress        log lines instead of a progress line, even on a terminal
  --no-png             write the loss plot as SVG only (default: also PNG when rsvg-convert
                       or ImageMagick is installed)
at the end
  --sample-lines N     lines of text to sample (default 8)
  --temperature X      sampling temperature (default 0.8)
  --top-k N            sample among the N likeliest characters (default 10)
  --compare-steps N    forward+backward steps timed eagerly and compiled (default 10)

Exit status: 0 done, 1 a file could not be read or written, 2 a bad flag.
)";
}

}  // namespace gpt
