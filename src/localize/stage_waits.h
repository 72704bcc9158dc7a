// Pipeline stages wait for each other: each passes its activations and gradients to the next
// point-to-point, so a stage held up by a straggler in another stage waits in its receives (and
// its replicas then wait for it in their all-reduce). Compared only within itself
// (groups.h), the waiting stage shows communication on every member and no straggler of its
// own: a global communication finding that is the other stage's straggler's effect.
#pragma once

#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

// One role group's findings, before they are merged into the diagnosis.
struct GroupFindings {
  const WorkerGroup* group = nullptr;
  std::vector<Finding> local;
  std::vector<Finding> global;
};

// Folds a stage's global communication finding into the costliest straggler (a local finding
// outside communication) of another stage, where both stages exchange point-to-point and the
// waiting stage lost no more per iteration than the straggler did: the straggler's evidence says
// that stage waited for it too.
void FoldWaitsForAnotherStage(std::vector<GroupFindings>* groups);

// A stage's global communication finding in its receives (not folded into a straggler that
// costs as much) where another stage that exchanges point-to-point waits within its communication
// box, no finding of its own in communication: the receives wait for that stage's work (the
// schedule's fill and drain, stages of unequal work, a straggler's excess), as every healthy
// pipeline's do, not for the network, whose slowness would hold every stage. A healthy 3-stage
// pipeline of 2 replicas (4 micro-batches a step) waited β 0.46-0.55 in its first two stages'
// receives while the last stage, with the head and the loss, computed 0.61-0.66 and waited
// 0.25-0.30; with a CPU quota on one of its ranks that cost nothing measurable (its own finding,
// 0 ms), the middle stage's wait had stood as `global communication` first. The finding becomes a
// note saying so; a change of it against the baseline is still the baseline's to find.
void SeeWaitsForABusierStage(std::vector<GroupFindings>* groups, const Expectations& e,
                             std::vector<std::string>* notes);

}  // namespace eroica
