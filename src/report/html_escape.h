// Escaping for text that came from traces, stacks or file names before it enters HTML or SVG:
// every name in a trace is attacker-controlled as far as the report is concerned.
#pragma once

#include <string>
#include <string_view>

namespace eroica {

// Escapes & < > " ' so the result is safe both as element text and inside a quoted attribute.
// Bytes that are not valid UTF-8 become U+FFFD; control characters other than tab and
// newline are dropped.
std::string EscapeHtml(std::string_view text);

// Shortens to at most max_chars characters (UTF-8 aware), ending in "…" when cut.
std::string Ellipsize(std::string_view text, size_t max_chars);

}  // namespace eroica
