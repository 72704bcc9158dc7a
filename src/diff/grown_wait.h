// One rank the others wait for more than in the job's past. Peers alone name a straggler whose
// excess stands out of their spread, or that the others waited for across the window (in 0.8 of
// its iterations and for 0.9 of their waiting, collective_waits.h: a bar set above healthy
// sessions' chance, where the waiting moves between ranks). On shared cores a rank given a little
// more work is waited for in most steps while the scheduler keeps its excess inside the others'
// swings and lends some waiting to a peer. The job's past then says what the window alone cannot:
// the others' wait for that rank grew against the baseline by at least half of the slowdown.
#pragma once

#include <vector>

#include "diff/baseline_findings.h"
#include "diff/pattern_diff.h"
#include "localize/expectations.h"
#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

// Where no finding stands for a slowdown against the baseline (UnexplainedSlowdownMs, the
// window's global findings explaining their impact only): the rank of a role group of 3 or more,
// named by no local finding, that the others waited for mostly in at least 0.8 of the window's
// iterations (kAcrossIterationsShare) and for more than half of all their waiting, by at least the
// straggler floor of a step, whose wait grew since the baseline by at least half the slowdown.
// The localizer's comparison with its peers, that wait taken as across the window
// (LocalFindingsWaitedAcross), says what it is (more work, a slower device, its loader, its code);
// its finding of that rank alone (not its collectives) is added, its impact bounded by the
// slowdown, placed most costly first (InsertUnexplainedCause).
// `expectations`: what the window was localized with.
void FindGrownWaitForOneRank(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                             const PatternDiff& diff, const Expectations& expectations, Diagnosis* diagnosis,
                             const BaselineOptions& options = {});

}  // namespace eroica
