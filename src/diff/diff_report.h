// The two forms of `eroica diff`: a text report (most significant change first) and the
// eroica.diff/v1 JSON document (docs/REPORTS.md).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "diff/pattern_diff.h"

namespace eroica {

std::string FormatDiffText(const PatternDiff& diff);
nlohmann::json DiffToJson(const PatternDiff& diff);

// "rank 3", "ranks 0-3", "ranks 0, 2"
std::string RanksText(const std::vector<int>& ranks);

// One change in a sentence: "aten::mm (compute) grew on ranks 0-3: 7.1 → 11.2 ms/iter (+4.1)…".
std::string ChangeSentence(const PatternChange& change);

}  // namespace eroica
