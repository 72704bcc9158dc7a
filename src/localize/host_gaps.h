// Host time a rank's code did not spend. Host time is the gaps between a rank's ops, named
// after the program point around them; most of a point's calls are its code's size, and a few
// far longer ones are its thread waiting for a CPU (preempted between two ops) or for something
// else that did not run there. A hot loop, a garbage collection or a checkpoint at a point that
// is reached once a step makes its call long in every step: its median call is its mean.
// Preemptions lengthen the calls of a minority of steps: the mean grows, the median does not.
//
// Measured on the tuning split (4 ranks on 2 cores): the top host point of the ranks with a hot
// loop, a GC storm, a synchronous checkpoint or light global Python had median/mean 0.63-1.12;
// a healthy rank the others waited for (host 0.20 of its step against its peers' 0.04) had its
// top point's median call 46 us and its mean 3.8 ms (0.01). On the probe split a GC storm and a
// loop after the first of 3 micro-batches sat at points reached 3 times a step.
#pragma once

#include <vector>

#include "localize/groups.h"

namespace eroica {

// Each member's share of host time held by calls beyond its points' median calls (each host
// point's β x (1 - median / mean)), in shares of the group's median iteration, as OwnShares
// gives them; one pass over the group. Only points reached at most once a step count: there a
// median call below the mean means most steps did not pay. Points with fewer than 3 calls in the
// window, or without a median call (pattern format 3 and older), count as their code's.
std::vector<double> HostGapShares(const WorkerGroup& group);

// The part of host point `f`'s β that its usual call explains (β x median / mean), on a worker
// whose window holds `iterations` steps; all of β where the median cannot tell (the same points
// as above are left out: fewer than 3 calls, reached more than once a step, no median call).
double UsualCallShare(const FunctionEntry& f, int iterations);

}  // namespace eroica
