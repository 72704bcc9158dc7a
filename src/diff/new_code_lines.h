// Code that runs now and did not at the baseline. A job that got slower everywhere because every
// rank now runs more of its own code (an evaluation pass, a metric, a debug check added) shows,
// against its past, as more compute or host time on every rank; which code, its stack samples
// tell: a line of the job's own code that now holds much of each rank's window and that the
// baseline's samples of the same ranks never reached.
#pragma once

#include <vector>

#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

// For each global finding without a location: the line that holds at least half of the finding's
// share of the iteration on a majority of its ranks sampled at both times, and that the
// baseline's lists of those ranks' lines (WorkerPattern::code_lines, not full) lack, with too
// many of its samples now for chance (MissingLineMeansNeverRan); of several,
// the deepest, nearest the work. Sets `location` and says so in the evidence and the advice.
void LocateByNewCodeLines(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                          std::vector<Finding>* findings);

}  // namespace eroica
