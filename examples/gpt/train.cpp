#include "train.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <random>

#include "aotgrad/aotgrad.h"
#include "checkpoint.h"
#include "corpus.h"
#include "model.h"
#include "plot.h"
#include "progress.h"

namespace gpt {
namespace {

namespace ag = aotgrad;
using ag::Tensor;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Held-out batches use their own stream of windows, the same ones at every estimate, so the
// estimates are comparable with each other.
constexpr uint64_t kHeldOutSeed = 0x5eed0f4e1d0b7ull;

class Trainer {
 public:
  Trainer(const Options& o, std::ostream& out, bool terminal)
      : o_(o), out_(out), progress_(out, terminal && o.progress) {}

  RunReport run() {
    set_threads();
    load();
    train_steps();
    finish();
    return std::move(report_);
  }

 private:
  using Compiled = ag::AotModule<Gpt>;

  void set_threads() {
    // One thread unless asked: on two busy cores, the second thread of each small matmul waited a
    // scheduler slice and made steps 3x slower than one thread.
    if (o_.threads > 0)
      omp_set_num_threads(static_cast<int>(o_.threads));
    else if (!std::getenv("OMP_NUM_THREADS"))
      omp_set_num_threads(1);
  }

  void load() {
    GptConfig config{0, o_.block, o_.layers, o_.heads, o_.embd};
    std::string vocab;
    if (o_.resume) {
      checkpoint_ = std::make_unique<Checkpoint>(read_checkpoint(*o_.resume));
      config = checkpoint_->config;
      vocab = checkpoint_->vocab;
    }
    corpus_ = load_corpus(o_.data, config.block_size, vocab);
    config.vocab_size = static_cast<int64_t>(corpus_.vocab.size());
    ag::manual_seed(o_.seed);
    model_ = std::make_shared<Gpt>(config);
    opt_ = std::make_unique<ag::optim::AdamW>(model_->parameters(), ag::optim::AdamWOptions(o_.lr));
    if (checkpoint_) {
      restore(*checkpoint_, *o_.resume, *model_, *opt_);
      first_step_ = checkpoint_->step;
    }
    end_step_ = std::max(first_step_, o_.steps);
    if (o_.stop_after > 0) end_step_ = std::min(end_step_, first_step_ + o_.stop_after);
    compiled_ = std::make_unique<Compiled>(
        ag::aot_module(model_, ag::AotConfig{.partitioner = "min_cut", .name = "gpt_step"}));
    print_header();
  }

  void print_header() {
    int64_t n_params = 0;
    for (const Tensor& p : model_->parameters()) n_params += p.numel();
    const GptConfig& c = model_->config;
    const std::string limit =
        o_.time_limit > 0 ? " (or " + fixed(o_.time_limit, 0) + " s: --time-limit)" : "";
    char line[768];
    std::snprintf(line, sizeof line,
                  "corpus   %s: %zu bytes, %zu distinct, %zu for training, %zu held out\n"
                  "model    %lld layers, %lld heads, width %lld, context %lld: %.2fM parameters\n"
                  "training %lld steps%s of %lld x %lld characters, AdamW lr %g, %d thread%s, "
                  "compiled with aot_module (min_cut)\n",
                  corpus_.description.c_str(), corpus_.bytes, corpus_.vocab.size(),
                  corpus_.train.size(), corpus_.held_out.size(), static_cast<long long>(c.n_layer),
                  static_cast<long long>(c.n_head), static_cast<long long>(c.n_embd),
                  static_cast<long long>(c.block_size), static_cast<double>(n_params) / 1e6,
                  static_cast<long long>(o_.steps), limit.c_str(), static_cast<long long>(o_.batch),
                  static_cast<long long>(c.block_size), o_.lr, omp_get_max_threads(),
                  omp_get_max_threads() == 1 ? "" : "s");
    out_ << line;
    if (checkpoint_)
      out_ << "resumed  from " << *o_.resume << " at step " << first_step_
           << " (its model size and vocabulary)\n";
    out_.flush();
  }

  // How far through the schedule training is: by steps, or by time when --time-limit comes first.
  double schedule_fraction(int64_t step) const {
    double f = static_cast<double>(step) / static_cast<double>(o_.steps);
    if (o_.time_limit > 0) f = std::max(f, seconds_since(train_start_) / o_.time_limit);
    return std::min(f, 1.0);
  }

  // Linear warmup over the first steps, then cosine decay to a tenth of the peak.
  double lr_at(int64_t step) const {
    const int64_t warmup = std::max<int64_t>(1, std::min<int64_t>(100, o_.steps / 10));
    if (step < warmup) return o_.lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
    const double w = static_cast<double>(warmup) / static_cast<double>(o_.steps);
    const double t = std::clamp((schedule_fraction(step) - w) / std::max(1.0 - w, 1e-9), 0.0, 1.0);
    return o_.lr * (0.1 + 0.45 * (1 + std::cos(M_PI * t)));
  }

  double train_one(int64_t step) {
    auto [x, y] = make_batch(corpus_.train, o_.batch, model_->config.block_size, o_.seed,
                             static_cast<uint64_t>(step));
    opt_->param_groups()[0].options().set_lr(lr_at(step));
    Clock::time_point t0 = Clock::now();
    Tensor loss = (*compiled_)(x, y);
    if (step == first_step_) {
      first_call_s_ = seconds_since(t0);
      min_cut_saved_ = compiled_->graphs().saved_activation_bytes;
    }
    loss.backward();
    opt_->step();
    opt_->zero_grad();
    return loss.item<double>();
  }

  void train_steps() {
    // Created only now, so that a bad --data or --resume leaves no empty directory behind.
    std::error_code ec;
    std::filesystem::create_directories(o_.out_dir, ec);
    if (ec)
      throw FileError("aotgrad-gpt: cannot create --out '" + o_.out_dir + "': " + ec.message());
    const int64_t block = model_->config.block_size;
    progress_.start(first_step_, end_step_, o_.batch * block, o_.time_limit);
    if (first_step_ < end_step_) estimate_held_out(first_step_);
    train_start_ = Clock::now();
    for (int64_t step = first_step_; step < end_step_; ++step) {
      double loss = train_one(step);
      report_.train_loss.emplace_back(step + 1, loss);
      progress_.step_done(step + 1, loss);
      if (o_.time_limit > 0 && step + 1 < end_step_ &&
          seconds_since(train_start_) >= o_.time_limit) {
        progress_.message("--time-limit " + fixed(o_.time_limit, 0) + " s reached at step " +
                          std::to_string(step + 1) + " of " + std::to_string(end_step_) +
                          " (the learning rate had decayed by then)");
        end_step_ = step + 1;
      }
      if ((step + 1) % o_.eval_every == 0 || step + 1 == end_step_) {
        estimate_held_out(step + 1);
        save(step + 1);
      }
    }
    train_s_ = seconds_since(train_start_);
    progress_.finish();
  }

  void estimate_held_out(int64_t step) {
    ag::NoGradGuard no_grad;
    Clock::time_point t0 = Clock::now();
    double sum = 0;
    for (int64_t i = 0; i < o_.eval_batches; ++i) {
      auto [x, y] = make_batch(corpus_.held_out, o_.batch, model_->config.block_size, kHeldOutSeed,
                               static_cast<uint64_t>(i));
      sum += (*compiled_)(x, y).item<double>();
      if (i == 0 && eval_first_call_s_ < 0) eval_first_call_s_ = seconds_since(t0);
    }
    double loss = sum / static_cast<double>(o_.eval_batches);
    report_.held_out.emplace_back(step, loss);
    progress_.message("held-out loss " + fixed(loss, 3) + " at step " + std::to_string(step));
  }

  void save(int64_t step) {
    report_.checkpoint = (std::filesystem::path(o_.out_dir) / "checkpoint.safetensors").string();
    try {
      save_checkpoint(report_.checkpoint, *model_, *opt_, corpus_.vocab, step);
    } catch (const std::exception& e) {
      throw FileError(std::string("aotgrad-gpt: ") + e.what());
    }
  }

  // Samples `o_.sample_lines` lines, each character drawn from the top-k of the model's
  // distribution at temperature T, starting from a newline.
  std::string sample() {
    ag::NoGradGuard no_grad;
    std::mt19937_64 rng(o_.seed);
    const std::string& vocab = corpus_.vocab;
    size_t nl = vocab.find('\n');
    std::vector<int64_t> ids = {nl == std::string::npos ? 0 : static_cast<int64_t>(nl)};
    std::string text;
    int64_t lines = 0;
    const int64_t block = model_->config.block_size, v = model_->config.vocab_size;
    while (lines < o_.sample_lines && static_cast<int64_t>(text.size()) < 160 * o_.sample_lines) {
      int64_t t = std::min<int64_t>(block, static_cast<int64_t>(ids.size()));
      Tensor ctx = ag::from_vector(std::vector<int64_t>(ids.end() - t, ids.end()), {1, t});
      std::vector<float> logits = model_->logits(ctx).select(1, t - 1).to_vector<float>();
      std::vector<int64_t> order(static_cast<size_t>(v));
      for (int64_t i = 0; i < v; ++i) order[static_cast<size_t>(i)] = i;
      const size_t k = static_cast<size_t>(std::min(o_.top_k, v));
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                        [&](int64_t a, int64_t b) { return logits[a] > logits[b]; });
      std::vector<double> weights(k);
      for (size_t i = 0; i < k; ++i)
        weights[i] = std::exp((logits[order[i]] - logits[order[0]]) / o_.temperature);
      int64_t next = order[std::discrete_distribution<size_t>(weights.begin(), weights.end())(rng)];
      ids.push_back(next);
      char c = vocab[static_cast<size_t>(next)];
      text += c;
      lines += c == '\n';
    }
    return text;
  }

  // Forward + backward of the same batches, compiled and eager alternating so both see the same
  // machine noise; the optimizer is left out (it is the same code in both).
  void compare() {
    if (o_.compare_steps == 0) return;
    std::vector<double> compiled_s, eager_s;
    for (int64_t i = -1; i < o_.compare_steps; ++i) {  // i = -1 warms the eager path up
      auto [x, y] = make_batch(corpus_.train, o_.batch, model_->config.block_size, o_.seed,
                               static_cast<uint64_t>(end_step_ + 1 + std::max<int64_t>(i, 0)));
      Clock::time_point t0 = Clock::now();
      (*compiled_)(x, y).backward();
      double tc = seconds_since(t0);
      model_->zero_grad();
      t0 = Clock::now();
      model_->forward(x, y).backward();
      double te = seconds_since(t0);
      model_->zero_grad();
      if (i < 0) continue;
      compiled_s.push_back(tc);
      eager_s.push_back(te);
    }
    const double tokens = static_cast<double>(o_.batch * model_->config.block_size);
    report_.compiled_tokens_per_s = tokens / median(compiled_s);
    report_.eager_tokens_per_s = tokens / median(eager_s);
  }

  // The activations the default partitioner would save for the same step, from one call of a
  // second compiled module (its own cache: the min_cut one is not disturbed).
  void measure_default_partitioner() {
    auto other =
        ag::aot_module(model_, ag::AotConfig{.partitioner = "default", .name = "gpt_default"});
    auto [x, y] = make_batch(corpus_.train, o_.batch, model_->config.block_size, o_.seed, 0);
    Tensor loss = other(x, y);
    report_.saved_bytes_default = other.graphs().saved_activation_bytes;
    if (min_cut_saved_ == 0) {  // resumed at the last step: nothing trained, measure now
      Tensor l2 = (*compiled_)(x, y);
      min_cut_saved_ = compiled_->graphs().saved_activation_bytes;
    }
    report_.saved_bytes_min_cut = min_cut_saved_;
  }

  void write_plot() {
    std::vector<std::pair<double, double>> raw, smooth;
    // An exponential moving average with Adam's bias correction, so it starts on the curve.
    double ema = 0, weight = 0;
    for (auto [step, loss] : report_.train_loss) {
      ema = 0.95 * ema + 0.05 * loss;
      weight = 0.95 * weight + 0.05;
      raw.emplace_back(static_cast<double>(step), loss);
      smooth.emplace_back(static_cast<double>(step), ema / weight);
    }
    std::vector<std::pair<double, double>> held;
    for (auto [step, loss] : report_.held_out) held.emplace_back(static_cast<double>(step), loss);
    std::vector<Series> series = {{"training (each step)", "#9ecae1", raw, false, 0.8},
                                  {"training (moving average)", "#08519c", smooth, false, 1.0},
                                  {"held out", "#e6550d", held, true, 1.0}};
    svg_path_ = (std::filesystem::path(o_.out_dir) / "loss.svg").string();
    write_text_file(svg_path_, loss_svg(series, "aotgrad-gpt: " + corpus_.description));
    if (o_.png) {
      std::string png = (std::filesystem::path(o_.out_dir) / "loss.png").string();
      if (svg_to_png(svg_path_, png)) png_path_ = png;
    }
  }

  void finish() {
    if (report_.held_out.empty() || report_.held_out.back().first != end_step_)
      estimate_held_out(end_step_);
    if (report_.checkpoint.empty()) save(end_step_);
    write_plot();
    report_.samples = sample();
    compare();
    measure_default_partitioner();
    print_summary();
  }

  void print_summary();

  const Options& o_;
  std::ostream& out_;
  Progress progress_;
  Corpus corpus_;
  std::unique_ptr<Checkpoint> checkpoint_;
  std::shared_ptr<Gpt> model_;
  std::unique_ptr<ag::optim::AdamW> opt_;
  std::unique_ptr<Compiled> compiled_;
  int64_t first_step_ = 0, end_step_ = 0;
  Clock::time_point train_start_;
  double train_s_ = 0, first_call_s_ = 0, eval_first_call_s_ = -1;
  size_t min_cut_saved_ = 0;
  std::string svg_path_, png_path_;
  RunReport report_;
};

std::string megabytes(size_t bytes) {
  return fixed(static_cast<double>(bytes) / 1e6, 2) + " MB";
}

// Control bytes of the sample (a binary --data file) would garble the terminal.
std::string printable(const std::string& text) {
  std::string out;
  for (char c : text)
    out += (static_cast<unsigned char>(c) < 0x20 && c != '\n') || c == 0x7f ? '?' : c;
  return out;
}

void Trainer::print_summary() {
  const RunReport& r = report_;
  if (!r.train_loss.empty()) {
    double first = r.train_loss.front().second, last = r.train_loss.back().second;
    out_ << "\ntrained steps " << first_step_ + 1 << "-" << end_step_ << " in "
         << clock_time(train_s_) << ": training loss " << fixed(first, 2) << " -> "
         << fixed(last, 2) << ", held-out " << fixed(r.held_out.front().second, 2) << " -> "
         << fixed(r.held_out.back().second, 2) << "\n";
  }
  out_ << "\nsamples (temperature " << o_.temperature << ", top-k " << o_.top_k << "):\n";
  std::string text = printable(r.samples);
  for (size_t start = 0; start < text.size();) {
    // A line, or its first 100 characters when the model has not learnt line breaks yet.
    size_t end = std::min(text.find('\n', start), std::min(text.size(), start + 100));
    out_ << "  | " << text.substr(start, end - start) << "\n";
    start = end + (end < text.size() && text[end] == '\n');
  }
  out_ << "\nsummary\n";
  if (!r.train_loss.empty() && train_s_ > 0)
    out_ << "  training     "
         << fixed(static_cast<double>(r.train_loss.size() *
                                      static_cast<size_t>(o_.batch * model_->config.block_size)) /
                      train_s_ / 1e3,
                  1)
         << "k tokens/s over the run (optimizer and held-out estimates included)\n";
  if (r.eager_tokens_per_s > 0)
    out_ << "  compiled     " << fixed(r.compiled_tokens_per_s / 1e3, 1) << "k tokens/s vs eager "
         << fixed(r.eager_tokens_per_s / 1e3, 1)
         << "k tokens/s: " << fixed(r.compiled_tokens_per_s / r.eager_tokens_per_s, 2)
         << "x (forward+backward, the same " << o_.compare_steps
         << " batches, alternating, median)\n";
  ag::CacheStats stats = compiled_->stats();
  if (!r.train_loss.empty())
    out_ << "  compile      cold: the first call took " << fixed(first_call_s_, 2)
         << " s (trace, joint graph, min_cut partition, compile, run); held-out (inference) graph "
         << fixed(std::max(eval_first_call_s_, 0.0), 2) << " s; then " << stats.hits
         << " cache hits, " << stats.compilations << " compilations\n";
  double less = r.saved_bytes_default
                    ? 100.0 * (1.0 - static_cast<double>(r.saved_bytes_min_cut) /
                                         static_cast<double>(r.saved_bytes_default))
                    : 0.0;
  out_ << "  activations  saved for backward per step: min_cut " << megabytes(r.saved_bytes_min_cut)
       << ", default partitioner " << megabytes(r.saved_bytes_default) << " (" << fixed(less, 0)
       << "% less)\n";
  out_ << "  checkpoint   " << r.checkpoint << " (continue: --resume " << r.checkpoint
       << " --steps " << (end_step_ < o_.steps ? o_.steps : 2 * o_.steps) << ")\n";
  out_ << "  loss curve   " << svg_path_ << (png_path_.empty() ? "" : ", " + png_path_) << "\n";
  out_.flush();
}

}  // namespace

RunReport run_gpt(const Options& options, std::ostream& out, bool terminal) {
  return Trainer(options, out, terminal).run();
}

}  // namespace gpt
