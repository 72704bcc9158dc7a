// Global findings: what most workers of a group do wrong against expectations (code, config,
// input pipeline, network), as opposed to one odd worker.
#pragma once

#include <string>
#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

// `straggler_found`: a rank of the group was found late on its own work; the others' waits for it
// then explain their idle links in collectives. `notes` gets why a cost over its box is no
// finding (the nodes' CPUs explain the wait: cpu_contention.h); `collectives_waited_for_cpu` is set
// where they explained the collectives' (Diagnosis::collectives_waited_for_cpu).
std::vector<Finding> FindGlobalProblems(const WorkerGroup& group, const Expectations& expectations,
                                        bool straggler_found = false, std::vector<std::string>* notes = nullptr,
                                        bool* collectives_waited_for_cpu = nullptr);

// Ranks listed in a finding are capped; the evidence says how many there are.
inline constexpr size_t kMaxListedWorkers = 64;

}  // namespace eroica
