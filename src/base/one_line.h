// Text a file gave, made fit for one line of a report: a planted trace or meta file may hold
// newlines, terminal escape sequences or a file's worth of bytes where a name or a reason goes.
#pragma once

#include <string>
#include <string_view>

namespace eroica {

// At most `max_bytes` of `text` ("..." after a cut), each control character (C0 and DEL) a space.
inline std::string OneLine(std::string_view text, size_t max_bytes) {
  std::string out(text.substr(0, max_bytes));
  if (text.size() > max_bytes) out += "...";
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

}  // namespace eroica
