// Code that runs now and did not at the baseline. A job that got slower everywhere because every
// rank now runs more of its own code (an evaluation pass, a metric, a debug check added) shows,
// against its past, as more compute or host time on every rank; which code, its stack samples
// tell: a line of the job's own code that now holds much of each rank's window and that the
// baseline's samples of the same ranks never reached.
#pragma once

#include <vector>

#include "diff/baseline_findings.h"
#include "diff/pattern_diff.h"
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

// Whether `location` (a line of the job's code) is code the baseline never ran on `ranks`: of
// those ranks sampled at both times whose code is where it was, most list it now and their
// baseline's lists (not full) lack it, with too many of its samples now for chance together
// (kChanceLineMissed). False where too few such ranks were sampled.
bool LineNewSinceTheBaseline(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                             const std::string& location, const std::vector<int>& ranks);

// The same evidence where no finding stands for the slowdown: a job slower than its baseline
// (by BaselineOptions::min_slowdown_share) in which almost every rank sampled at both times now
// runs a line of its code that its baseline's samples never reached (their windows missing it by
// chance, had they run it alike, no likelier than kChanceLineMissed together: a 3-rank session of
// 0.6 s windows held its new line 7-10 sampling periods a rank, too few for 2 of the 3 alone,
// about 1e-6 together), for long enough that it
// alone would slow the job's step (StepMs) by that same share (the median rank's time under it), is
// slower by that code: new code on every rank is a slowdown by the detector's own rule. Which
// code a program point's time is named by shifts with the ops around it, so such a cost can stay
// under every per-function bar of the pattern diff; the line does not shift. Nor need the line
// hold the whole slowdown: on shared cores every rank's new Python also takes the processor from
// its peers' work (the audio job of the tests: 13 ms a step under the line, 28 ms slower). Of
// several such lines, the deepest, nearest the work. Adds one global finding of the
// own-work category that grew most on those ranks (median), named by that category's largest
// grown function, unless a global finding exists or a local one explains the slowdown.
void FindNewCodeOnEveryRank(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                            const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options = {});

}  // namespace eroica
