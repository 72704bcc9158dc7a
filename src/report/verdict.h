// A finding in one plain sentence (who, what, how much per iteration), shared by the HTML report
// and the AI prompt. The terminal report keeps its compact one-line form (text_report.h).
#pragma once

#include <string>

#include "localize/finding.h"
#include "summary/function_name.h"

namespace eroica {

// "Rank 7", "Ranks 1, 2 and 5", "All 8 ranks", "12 ranks".
std::string WorkersPhrase(const Finding& finding, int total_workers);

// "Rank 1 loses 51.9 ms per iteration in the data loader
// (enumerate(DataLoader)#...__next__); the other 3 ranks wait for it."
std::string FindingSentence(const Finding& finding, int total_workers);

// Milliseconds with a sensible number of digits: "51.9 ms", "0.42 ms", "1.3 s".
std::string FormatDuration(double seconds);

}  // namespace eroica
