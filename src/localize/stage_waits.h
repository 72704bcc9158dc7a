// Pipeline stages wait for each other: each passes its activations and gradients to the next
// point-to-point, so a stage held up by a straggler in another stage waits in its receives (and
// its replicas then wait for it in their all-reduce). Compared only within itself
// (groups.h), the waiting stage shows communication on every member and no straggler of its
// own: a global communication finding that is the other stage's straggler's effect.
#pragma once

#include <vector>

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

}  // namespace eroica
