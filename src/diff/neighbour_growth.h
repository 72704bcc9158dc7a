// A job slowed since its baseline because processes outside it came to share its node: the
// node's cores busy, what those processes held grown by more than the busy bar leaves to noise
// (1 - kBusyCoresShare of the node's cores), and the job's own processes there holding fewer
// cores than at the baseline. Its ranks then run when the neighbour lets them; every rank's ops
// and collectives stretch alike, which compared with the baseline reads as every rank's code or
// the network getting slower. A healthy control run in CI beside other tests went 19.5 -> 31.8 ms
// a step, every rank's allreduce 2.87 -> 9.26 ms a call, and was named `global communication`
// against the baseline. Measured (localize/node_cores.h's readings, 2 cores, two compilers started
// after the baseline): 4 healthy DDP ranks, the outside grown 1.33-1.44 cores, the job's own
// 0.73-0.74 -> 0.51-0.53; a 4-rank GAN (batch P's run this bar was
// revised on) 0.69-0.74, its own 1.87 -> 1.21-1.26.
// Over the 208 batch sessions of stops 62-66 against their baselines (one job on the machine at a
// time) the outside grew 0.26 cores or less, but by 0.36-0.55 where a rank saved a checkpoint each
// step (the kernel's writeback threads run outside the job's processes) and 0.30-1.07 where a
// rank's CPU quota throttled it; in each of those the rank's own finding explained the slowdown,
// which then comes first (ALocalFindingExplains). CPU training only: a GPU's kernels and NCCL's
// transfers do not wait for a neighbour's processes. What the readings cannot tell: work at the
// idle priority only soaks the cores the job leaves idle (CI's sanitizer build beside the tests
// held 1.40 of 2 cores against a 4-rank pipeline's 0.60, most of which waited for its slow
// first stage); where it starts after the baseline while the job idles more for a cause of its
// own that no rank's finding explains, it reads as a neighbour.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "localize/finding.h"
#include "localize/node_cores.h"
#include "summary/pattern.h"

namespace eroica {

struct NeighbourGrowth {
  NodeCores then;
  NodeCores now;
};

// The node (by host name, read in both windows) where the outside's cores grew the most, on
// those terms; nullopt where none did.
std::optional<NeighbourGrowth> FindNeighbourGrowth(const std::vector<WorkerPattern>& base,
                                                   const std::vector<WorkerPattern>& now);

// Whether a finding of the window's own on one or a few ranks (not standing) explains at least
// `explains_share` of the slowdown against the baseline: then the outside's growth is no cause of
// its own. The kernel's threads that write back a rank's checkpoints run outside the job's
// processes: stop 64's e-ckpt1 and stop 66's m-ckpt3 (a rank saving each step) grew the outside
// 0.04 -> 0.49-0.59 and 0.24 -> 0.59-0.66 cores, the job's own falling as much, where that rank's
// saves were named; stop 64's e-quota0 (a rank's CPU quota) 0.22 -> 1.29.
bool ALocalFindingExplains(const Diagnosis& diagnosis, double slowdown_ms, double explains_share);

// What it says, for the diagnosis's notes.
std::string NeighbourGrowthNote(const NeighbourGrowth& growth);

// The same in a verdict's words (Diagnosis::slowed_by), with the slowdown (% of the baseline's step).
std::string NeighbourSlowedBy(const NeighbourGrowth& growth, double slowdown_percent);

}  // namespace eroica
