// Ranks as people read them in one line: "0-3, 5, 7-8" (consecutive ranks folded into a range).
#pragma once

#include <fmt/core.h>

#include <string>
#include <vector>

namespace eroica {

// `ranks` sorted ascending.
inline std::string RankRanges(const std::vector<int>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += j == i ? fmt::format("{}", ranks[i]) : fmt::format("{}-{}", ranks[i], ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace eroica
