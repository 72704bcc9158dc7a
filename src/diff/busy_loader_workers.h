// DataLoader workers that took the cores from training. Prefetching workers that make batches
// slower need not make training wait for them: on a node whose cores are all busy, the CPU they
// add is taken from the training threads, whose own ops then run slower. Peers see nothing (every
// rank alike), the loader's wait stays small, and what grew against the baseline is compute: the
// cause is told by the workers' own CPU time per iteration, which the node's sampler reads
// (CpuShare::loader_cpu).
#pragma once

#include <vector>

#include "diff/baseline_findings.h"
#include "diff/pattern_diff.h"
#include "localize/finding.h"
#include "summary/pattern.h"

namespace eroica {

// Where no finding stands for a slowdown against the baseline (UnexplainedSlowdownMs): the
// DataLoader workers of almost every rank read at both times use more CPU per iteration than at
// the baseline (each by 2 % of the job's step, StepMs, above the healthy sessions' drift), on nodes
// whose cores were busy (kBusyCoresShare, median) so that the time came from training, and what
// they added on the busiest node, over its cores, is at least min_slowdown_share of the
// job's step (what would slow it by the detector's rule). Adds one global dataloader
// finding, its impact that taken time (bounded by the slowdown), its location the workers'
// hottest frame of the job's code that most of those ranks list and their baseline did not.
void FindLoaderWorkersTakingCores(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                                  const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options = {});

}  // namespace eroica
