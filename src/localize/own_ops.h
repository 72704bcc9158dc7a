// Ops a rank calls that its peers never do. The scheduler's noise runs the code every rank runs,
// longer or shorter; it does not make one rank call ops no peer calls. Such ops, with the Python
// between them, are code of that rank's own (metrics computed per parameter, logging, an extra
// pass on one rank): they cost the job whether the others then wait for it or, on cores the ranks
// share, slow down in their own ops because it holds the processor, so its own work need not
// stand out from theirs.
#pragma once

#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

// A member on CPU training whose ops that no peer's pattern lists (each called at least once a
// step, each above every peer's smallest listed function, so that a peer's absence is no fold of
// its tail), with the Python between them ("(python between A and B)" where A or B is such an op),
// hold the straggler's floor of its step or more is a local host finding at the largest of them,
// costing their share of the group's median step. A local finding on own work already naming it
// becomes this one where these ops hold at least half its excess. An unseen 4-rank vision
// transformer whose rank 0 logged every parameter's norm with .item() 60 times a step: 1,770
// aten::norm calls a step that its peers never made, β 0.10 of its step with the Python between
// them, its own work no longer than theirs on 2 shared cores (they were slowed instead): healthy.
// CPU training only: on a GPU the ops seen are the host's launches, whose cost is the device's.
// Three ranks or more: the count's noise is read from the group (two ranks have no spread).
void NameOpsOnlyItCalls(const WorkerGroup& group, const Expectations& e, std::vector<Finding>* local);

}  // namespace eroica
