// Local findings: the odd worker out in a group. A straggler does more of its own work
// (loading, computing, host code) while its peers wait for it in collectives; the finding
// names the straggler and its own excess, never the peers' waiting (docs/DESIGN.md "Cause, not
// symptom").
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

// Stragglers named one by one in a group at most; the rest are counted.
inline constexpr size_t kMaxLocalFindings = 16;

// `waited_across`: a member the job's past says the others waited for across the window
// (collective_waits.h FindLastArriver).
std::vector<Finding> FindLocalProblems(const WorkerGroup& group, const Expectations& expectations,
                                       std::optional<size_t> waited_across = std::nullopt);

// Which members the others waited for in every iteration of the window, where two or more and
// fewer than half the group are (each late by the straggler floor in every one of 4+ iterations):
// several ranks late alike, each a straggler.
std::vector<bool> RanksLateAlike(const WorkerGroup& group, const Expectations& expectations);

}  // namespace eroica
