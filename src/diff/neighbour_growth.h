// A job slowed since its baseline because processes outside it came to share its node: the
// node's cores busy, and what those processes held grown by more than the job's own processes
// now hold there. Its ranks then run when the neighbour lets them; every rank's ops and
// collectives stretch alike, which compared with the baseline reads as every rank's code or the
// network getting slower. A healthy control run in CI beside other tests went 19.5 -> 31.8 ms a
// step, every rank's allreduce 2.87 -> 9.26 ms a call, and was named `global communication`
// against the baseline. Measured (localize/node_cores.h's readings): 4 healthy DDP ranks on 2
// cores, two compilers started after the baseline: the outside grew by 1.33-1.44 cores against
// the job's 0.51-0.53 now; over stops 63-66's 111 batch sessions against their baselines, by
// at most 0.42 cores, against the job's 1.30 or more (a rank saving a checkpoint each step, the
// kernel's writeback threads).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "localize/node_cores.h"
#include "summary/pattern.h"

namespace eroica {

struct NeighbourGrowth {
  NodeCores then;
  NodeCores now;
};

// The node (by host name, read in both windows) where the outside's cores grew the most past
// the job's own now, on cores busy kBusyCoresShare of the window; nullopt where none did.
std::optional<NeighbourGrowth> FindNeighbourGrowth(const std::vector<WorkerPattern>& base,
                                                   const std::vector<WorkerPattern>& now);

// What it says, for the diagnosis's notes.
std::string NeighbourGrowthNote(const NeighbourGrowth& growth);

}  // namespace eroica
