#include "trace/timestamp.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace eroica {
namespace {

constexpr int64_t kMaxMicros = std::numeric_limits<int64_t>::max() / 1000 - 1;

inline bool IsJsonWhitespace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string_view TrimNumber(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n' || text[end - 1] == '\r' || text[end - 1] == '\t')) {
    --end;
  }
  return text.substr(0, end);
}

std::optional<int64_t> ParseViaDouble(std::string_view text) {
  double value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(value)) {
    return std::nullopt;
  }
  double ns = std::nearbyint(value * 1000.0);
  if (std::fabs(ns) >= 9.2e18) return std::nullopt;
  return static_cast<int64_t>(ns);
}

}  // namespace

std::optional<int64_t> ParseMicrosToNanos(std::string_view text) {
  text = TrimNumber(text);
  if (text.empty()) return std::nullopt;
  bool negative = text[0] == '-';
  size_t pos = negative ? 1 : 0;
  int64_t micros = 0;
  size_t int_start = pos;
  while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
    if (micros > kMaxMicros / 10) return std::nullopt;
    micros = micros * 10 + (text[pos] - '0');
    ++pos;
  }
  if (pos == int_start) return std::nullopt;
  int64_t fraction_ns = 0;
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    int digits = 0;
    size_t frac_start = pos;
    bool round_up = false;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 3) {
        fraction_ns = fraction_ns * 10 + (text[pos] - '0');
      } else if (digits == 3) {
        round_up = text[pos] >= '5';
      }
      ++digits;
      ++pos;
    }
    if (pos == frac_start) return std::nullopt;
    for (int d = digits; d < 3; ++d) fraction_ns *= 10;
    if (round_up) ++fraction_ns;
  }
  if (pos < text.size()) {
    // Exponent notation is rare in traces; precision is then a double's.
    if (text[pos] == 'e' || text[pos] == 'E') return ParseViaDouble(text);
    return std::nullopt;
  }
  if (micros > kMaxMicros) return std::nullopt;
  int64_t ns = micros * 1000 + fraction_ns;
  return negative ? -ns : ns;
}

std::optional<int64_t> ParseInteger(std::string_view text) {
  // Fast path: plain decimal digits (pids, ids, counts), then only whitespace.
  size_t pos = 0, size = text.size();
  bool negative = size > 0 && text[0] == '-';
  pos = negative ? 1 : 0;
  uint64_t digits = 0;
  size_t first_digit = pos;
  while (pos < size && pos - first_digit < 18 && static_cast<unsigned>(text[pos] - '0') < 10) {
    digits = digits * 10 + static_cast<unsigned>(text[pos] - '0');
    ++pos;
  }
  if (pos > first_digit && (pos == size || (pos - first_digit < 18 && IsJsonWhitespace(text[pos])))) {
    while (pos < size && IsJsonWhitespace(text[pos])) ++pos;
    if (pos == size) return negative ? -static_cast<int64_t>(digits) : static_cast<int64_t>(digits);
  }
  text = TrimNumber(text);
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size()) return value;
  std::optional<int64_t> ns = ParseMicrosToNanos(text);  // "3.0" from pandas re-exports
  if (ns && *ns % 1000 == 0) return *ns / 1000;
  return std::nullopt;
}

}  // namespace eroica
