// The loss curve as a self-contained SVG (no library: a few hundred bytes of markup per series),
// and a PNG next to it when a converter is installed.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace gpt {

struct Series {
  std::string label;
  std::string color;                              // an SVG colour
  std::vector<std::pair<double, double>> points;  // (step, loss)
  bool markers = false;                           // dots at the points, for sparse series
  double opacity = 1.0;
};

std::string loss_svg(const std::vector<Series>& series, const std::string& title);

// Writes `text` to `path`; throws FileError naming it when that fails.
void write_text_file(const std::string& path, const std::string& text);

// Converts the SVG with rsvg-convert, or ImageMagick's magick or convert, whichever is on PATH
// first; returns the tool's name, or nullopt when none is installed or the conversion failed.
std::optional<std::string> svg_to_png(const std::string& svg, const std::string& png);

}  // namespace gpt
