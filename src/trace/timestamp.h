// Kineto timestamps are microseconds written as decimal text, sometimes with nanosecond
// decimals on epoch values (1712195495521131.125) that a double cannot hold exactly. We parse
// the text straight into integer nanoseconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace eroica {

// Parses a JSON number in microseconds ("12", "12.5", "-3", "1.7e3") into nanoseconds, rounding
// sub-nanosecond digits to nearest. Returns nullopt for non-numbers and values that overflow.
std::optional<int64_t> ParseMicrosToNanos(std::string_view text);

// Parses a JSON integer (or integral float) into int64; nullopt if not a number or overflowing.
std::optional<int64_t> ParseInteger(std::string_view text);

}  // namespace eroica
