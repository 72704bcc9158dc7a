// The HTML report's "Against the baseline" section (`report --baseline`): each side's iteration
// time and the largest changes per function, as `eroica diff` lists them.
#pragma once

#include <string>

#include "diff/pattern_diff.h"

namespace eroica {

// Empty when there is no diff to show.
std::string BaselineSectionHtml(const PatternDiff* diff);

}  // namespace eroica
