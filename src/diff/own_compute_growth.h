// A rank's own ops slower than in the job's past, on a CPU longer than its peers. Peers alone miss
// a rank that is late in some steps only where the others' own work swings as much from step to
// step: on shared cores the scheduler moves their turns, and their waits for it in the steps it
// stalled move their shares. Against the baseline its compute grew on it alone, beyond the
// pattern diff's bars (pattern_diff.h: the ranks' spread, its own iterations' noise, 5 % of its
// step, outside the baseline's range of ranks, in all but one iteration), while the others'
// collectives grew (they waited for it). On CPU training the scheduler's contention makes a rank's
// ops slower by giving it less processor, not more: where the training threads were read, its
// thread must have run on a CPU longer than its peers' by the straggler floor (its own work).
#pragma once

#include <vector>

#include "diff/baseline_findings.h"
#include "diff/pattern_diff.h"
#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

// Where no finding stands for a slowdown against the baseline (UnexplainedSlowdownMs, the
// window's global findings explaining their impact only): compute that grew on fewer than half
// of a role's ranks (a change on more is every rank's, which ApplyBaseline reads), none of them
// named by a local finding already, each one's training thread on a CPU longer than its peers' median
// by the straggler floor where the threads were read (on busy cores without those readings the
// contention may be what slowed its ops: nothing is said). Adds one local compute finding for
// those ranks, named by their largest grown compute function, its impact their median growth
// (bounded by the slowdown), placed most costly first (InsertUnexplainedCause).
void FindOwnComputeGrowth(const std::vector<WorkerPattern>& now, const PatternDiff& diff, Diagnosis* diagnosis,
                          const BaselineOptions& options = {});

}  // namespace eroica
