// How far each worker leads every peer at one host function. Code runs at a program point: a
// hot loop, or a GC storm where its garbage is made, puts one worker far above all its peers at
// that point (summary/program_points.h). A busy host's scheduling delays spread over many
// points and lead at none by much. Measured on CPU DDP runs (4 ranks on 2 cores): the largest
// lead in 51 healthy runs, 44 of them with a second job on the cores, was 0.10 of the window;
// 40 ms hot loops and GC storms led by 0.38-0.56. Only Python program points and GC count: the
// optimizer's step is work sized by the model, which runs at its peers' pace unless the rank was
// descheduled (two healthy runs of 167, 2-8 ranks, led by 0.27 and 0.34 there, in the window's
// last step); over the same 167 runs Python points led by at most 0.17, the tuning split's hot
// loops and GC storms by 0.40-0.59.
#pragma once

#include <vector>

#include "localize/groups.h"

namespace eroica {

// Whether a host point recurs in every profiled iteration of the worker: a cost of each step
// does; a one-off does not (the window's last step preempted once on a shared machine, a log line
// every N steps), however large it is once.
bool InEveryIteration(double calls_per_iter, int iterations);
inline bool InEveryIteration(const FunctionEntry& f, int iterations) {
  return InEveryIteration(static_cast<double>(f.calls_per_iter), iterations);
}

// Per member of `group`: its largest lead in β over the most of any peer at one Python program
// point or GC that recurs in every iteration (0 where it leads nowhere). The top two β per function in one
// pass over the group.
std::vector<double> HostFunctionLeads(const WorkerGroup& group);

}  // namespace eroica
