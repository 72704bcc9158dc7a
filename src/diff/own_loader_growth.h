// A rank's own input pipeline slower than in the job's past. Peers alone miss it where the ranks'
// steps vary more than its loader grew: with sequences of random lengths the slowest rank of a
// step moves every step, and a rank whose loader waits longer each step is the slowest in only
// some of them. Against the baseline its wait for batches grew on it alone, beyond the pattern
// diff's bars (pattern_diff.h: the ranks' spread, its own iterations' noise, 5 % of its step,
// outside the baseline's range of ranks, in all but one iteration). Loading is the rank's own
// work (its dataset, collate, storage; its worker processes'), and each step's collectives wait
// for the rank that is late: its growth is a slowdown its peers pay.
#pragma once

#include <vector>

#include "diff/baseline_findings.h"
#include "diff/pattern_diff.h"
#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

// Where no finding stands for a slowdown against the baseline (UnexplainedSlowdownMs; a global
// finding of the window's explains its impact only, and one of every rank's loader leaves no
// rank's own): a DataLoader
// function that grew on fewer than half of a role's ranks (a change on more is every rank's, which
// ApplyBaseline reads) and on none of them already named for their loader. Adds one local
// dataloader finding for those ranks, its impact their median growth (bounded by the slowdown),
// placed most costly first (InsertUnexplainedCause).
void FindOwnLoaderGrowth(const std::vector<WorkerPattern>& now, const PatternDiff& diff, Diagnosis* diagnosis,
                         const BaselineOptions& options = {});

}  // namespace eroica
