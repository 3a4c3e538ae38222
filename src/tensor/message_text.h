// Quoting user input inside error messages.
//
// Messages name the user's file, flag or token, but the bytes come from the user: a control byte
// would garble a terminal and a megabyte token would bury the message. Every layer that echoes
// input (the graph parser, the .npy reader, the command line) quotes it through this one helper,
// so messages stay one printable line of bounded length.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace aotgrad {

// `text` with every byte outside printable ASCII written as \xHH, cut to at most `max_chars`
// characters of output, ending in "..." when cut. A backslash is escaped too (\x5c), so that the
// output reads back unambiguously, unless `keep_backslash`: for text that is escaped already (a
// whole message made of escaped pieces) and only needs bounding. Thread-safe (pure).
inline std::string escape_for_message(std::string_view text, size_t max_chars = 64,
                                      bool keep_backslash = false) {
  static constexpr char kHex[] = "0123456789abcdef";
  constexpr size_t kEllipsis = 3;
  std::string out;
  size_t cut = std::string::npos;  // where "..." goes if the whole text does not fit
  for (char c : text) {
    auto b = static_cast<unsigned char>(c);
    bool plain = b >= 0x20 && b < 0x7f && (b != '\\' || keep_backslash);
    size_t width = plain ? 1 : 4;
    if (cut == std::string::npos && out.size() + width + kEllipsis > max_chars) cut = out.size();
    if (out.size() + width > max_chars) return out.substr(0, cut) + "...";
    if (plain) {
      out += c;
    } else {
      out += "\\x";
      out += kHex[b >> 4];
      out += kHex[b & 0xf];
    }
  }
  return out;
}

}  // namespace aotgrad
