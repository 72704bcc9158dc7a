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

// Where the job slowed against the baseline: the
// DataLoader workers of almost every rank read at both times use more CPU per iteration than at
// the baseline (each by 2 % of the job's step, StepMs, above the healthy sessions' drift), on nodes
// whose cores were busy (kBusyCoresShare, median) so that the time came from training, and what
// they added on the busiest node, over its cores, is at least min_slowdown_share of the
// job's step (what would slow it by the detector's rule). Adds one global dataloader
// finding, its impact that taken time, bounded by what the other findings leave of the slowdown
// (UnexplainedSlowdownMs), or by the whole slowdown where they claim all of it but for a hang
// (their impacts, read from waits, can overstate what the job lost), its location the workers'
// hottest frame of the job's code that most of those ranks list and their baseline did not.
void FindLoaderWorkersTakingCores(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                                  const PatternDiff& diff, Diagnosis* diagnosis, const BaselineOptions& options = {});

// Where a slowdown is still unexplained after that (UnexplainedSlowdownMs): one rank's DataLoader
// workers (not almost every rank's) use more CPU per iteration than at the baseline, by 2 % of the
// job's step and more than twice the others' median growth (what is shared is the job's), on a
// node whose cores were busy, and what they added over the node's cores is at least
// min_slowdown_share of the step. Its peers cannot tell it where its role has too few ranks to
// compare with (a pipeline stage of 2 replicas; cpu_contention.h's BlameBusyLoaderWorkers needs 3):
// its own past can. Adds a local dataloader finding for each such rank not already named for its
// loader, costliest first, its impact the taken time (bounded by what is left, or by the whole
// slowdown where the other findings claim it all but for a hang, as above: a pipeline's rank 0
// checkpointing 222 ms a step claimed all of a +131 ms slowdown while its stage's other rank's
// worker took 67 ms a step of the 2 cores), its location its
// workers' hottest frame that their baseline did not list; every rank's slower ops costing no more
// than they took are its symptom (FoldSlowerOpsCostingNoMoreThan).
void FindOwnLoaderWorkersTakingCores(const std::vector<WorkerPattern>& base, const std::vector<WorkerPattern>& now,
                                     const PatternDiff& diff, Diagnosis* diagnosis,
                                     const BaselineOptions& options = {});

}  // namespace eroica
