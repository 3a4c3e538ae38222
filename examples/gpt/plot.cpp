#include "plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "corpus.h"

extern char** environ;

namespace gpt {
namespace {

constexpr double kWidth = 720, kHeight = 420;
constexpr double kLeft = 64, kRight = 24, kTop = 40, kBottom = 52;

std::string num(double v, int precision = 2) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}

std::string escape_xml(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `count` ticks over `span`.
double tick_step(double span, int count) {
  double raw = span / count;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

bool on_path(const std::string& tool) {
  const char* path = std::getenv("PATH");
  if (!path) return false;
  std::string dirs = path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    std::string file = dirs.substr(start, end - start) + "/" + tool;
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111)) return true;
    start = end + 1;
  }
  return false;
}

// Runs argv without a shell (paths are passed as they are), output discarded; true on exit 0.
bool run_quietly(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

std::string loss_svg(const std::vector<Series>& series, const std::string& title) {
  double x_max = 1, y_min = 1e300, y_max = -1e300;
  for (const Series& s : series)
    for (auto [x, y] : s.points) {
      x_max = std::max(x_max, x);
      y_min = std::min(y_min, y);
      y_max = std::max(y_max, y);
    }
  if (y_min > y_max) y_min = 0, y_max = 1;
  const double y_tick = tick_step(std::max(y_max - y_min, 1e-3), 6);
  y_min = std::floor(y_min / y_tick) * y_tick;
  y_max = std::ceil(y_max / y_tick) * y_tick;
  if (y_max <= y_min) y_max = y_min + y_tick;
  const double x_tick = tick_step(x_max, 8);
  x_max = std::ceil(x_max / x_tick) * x_tick;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double x) { return kLeft + x / x_max * pw; };
  auto py = [&](double y) { return kTop + (y_max - y) / (y_max - y_min) * ph; };

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(kWidth, 0) +
                    "\" height=\"" + num(kHeight, 0) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + num(kWidth / 2, 0) +
         "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + escape_xml(title) + "</text>\n";
  for (double y = y_min; y <= y_max + y_tick / 2; y += y_tick) {
    svg += "<line x1=\"" + num(kLeft) + "\" x2=\"" + num(kLeft + pw) + "\" y1=\"" + num(py(y)) +
           "\" y2=\"" + num(py(y)) + "\" stroke=\"#e4e4e4\"/>\n";
    svg += "<text x=\"" + num(kLeft - 6) + "\" y=\"" + num(py(y) + 4) + "\" text-anchor=\"end\">" +
           num(y, y_tick < 0.1 ? 2 : 1) + "</text>\n";
  }
  for (double x = 0; x <= x_max + x_tick / 2; x += x_tick)
    svg += "<text x=\"" + num(px(x)) + "\" y=\"" + num(kTop + ph + 18) +
           "\" text-anchor=\"middle\">" + num(x, 0) + "</text>\n";
  svg += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(kTop) + "\" width=\"" + num(pw) +
         "\" height=\"" + num(ph) + "\" fill=\"none\" stroke=\"#888\"/>\n";
  svg += "<text x=\"" + num(kLeft + pw / 2) + "\" y=\"" + num(kHeight - 12) +
         "\" text-anchor=\"middle\">step</text>\n";
  svg += "<text transform=\"translate(16," + num(kTop + ph / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">cross-entropy (nats per character)</text>\n";
  double legend_y = kTop + 16;
  for (const Series& s : series) {
    if (s.points.empty()) continue;
    std::string pts;
    for (auto [x, y] : s.points) pts += num(px(x)) + "," + num(py(y)) + " ";
    svg += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.6\" opacity=\"" +
           num(s.opacity) + "\" points=\"" + pts + "\"/>\n";
    if (s.markers)
      for (auto [x, y] : s.points)
        svg += "<circle cx=\"" + num(px(x)) + "\" cy=\"" + num(py(y)) + "\" r=\"3\" fill=\"" +
               s.color + "\"/>\n";
    svg += "<line x1=\"" + num(kLeft + pw - 200) + "\" x2=\"" + num(kLeft + pw - 180) + "\" y1=\"" +
           num(legend_y - 4) + "\" y2=\"" + num(legend_y - 4) + "\" stroke=\"" + s.color +
           "\" stroke-width=\"2\" opacity=\"" + num(s.opacity) + "\"/>\n";
    svg += "<text x=\"" + num(kLeft + pw - 174) + "\" y=\"" + num(legend_y) + "\">" +
           escape_xml(s.label) + "</text>\n";
    legend_y += 18;
  }
  return svg + "</svg>\n";
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw FileError("aotgrad-gpt: cannot write '" + path + "': " + std::strerror(errno));
}

std::optional<std::string> svg_to_png(const std::string& svg, const std::string& png) {
  std::remove(png.c_str());
  if (on_path("rsvg-convert") && run_quietly({"rsvg-convert", "-o", png, svg}))
    return "rsvg-convert";
  for (const char* tool : {"magick", "convert"})
    if (on_path(tool) && run_quietly({tool, svg, png})) return std::string(tool);
  return std::nullopt;
}

}  // namespace gpt
