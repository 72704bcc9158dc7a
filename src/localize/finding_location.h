// The code location of a host or dataloader finding: the frame of the job's own code that the
// window's stack samples found hottest in the finding's function (stack_attribution.h), on the
// culprit for a local finding, the one most ranks agree on for a global one.
#pragma once

#include <vector>

#include "localize/finding.h"
#include "localize/worker_table.h"

namespace eroica {

// Fills `location` (and says the share in `evidence`) where it is empty and samples name one.
void LocateFindings(const WorkerTable& table, std::vector<Finding>* findings);

}  // namespace eroica
