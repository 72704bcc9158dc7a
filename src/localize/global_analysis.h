// Global findings: what most workers of a group do wrong against expectations (code, config,
// input pipeline, network), as opposed to one odd worker.
#pragma once

#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

// `straggler_found`: a rank of the group was found late on its own work; the others' waits for it
// then explain their idle links in collectives.
std::vector<Finding> FindGlobalProblems(const WorkerGroup& group, const Expectations& expectations,
                                        bool straggler_found = false);

// Ranks listed in a finding are capped; the evidence says how many there are.
inline constexpr size_t kMaxListedWorkers = 64;

}  // namespace eroica
