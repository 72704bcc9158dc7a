// This window's findings that the baseline had too. The peers and the expected boxes judge one
// window alone: a loader every rank waits for, over the box, is a finding in every window of a
// job that always had it. Against the baseline such a cost is one the job already paid, not what
// made it slower: what changed leads and the standing costs follow.
#pragma once

#include <vector>

#include "diff/pattern_diff.h"
#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

// Marks each finding of this window (not one the baseline rules made) whose cost the baseline
// had: a global finding whose category's share of the step grew since the baseline by less than
// half of its cost, median over its ranks (or, where the job runs no slower than at the
// baseline, whose time a step did); a local one whose rank's excess over its peers in its
// category was at the baseline at least half what it is now. Shares of a step, not times,
// unless the job is no slower: the job's first profiled window, its baseline's, runs slowest
// (baseline_findings.h StepMs), so its times alone would call a grown cost one it had. A
// marked finding says so in its evidence, and stands for no slowdown (UnexplainedSlowdownMs).
// Imbalance and hangs are never marked, nor a local finding on a rank whose CPU quota holds it
// back now and held it back less than half as long at the baseline (its quota is new). Run
// before the baseline's own rules.
void MarkStandingCosts(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                       const PatternDiff& diff, Diagnosis* diagnosis);

// The findings that are not standing move ahead of those that are (hangs stay first), each
// group in its order: what changed since the baseline first, whether or not the job got slower.
void PutStandingCostsLast(Diagnosis* diagnosis);

}  // namespace eroica
