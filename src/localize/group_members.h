// Small views of a group's members that several rules share: by rank, named by a finding, and the
// least excess that makes a straggler.
#pragma once

#include <cstddef>
#include <optional>
#include <unordered_map>
#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/groups.h"

namespace eroica {

// Each member's index by its rank, for findings that name ranks.
std::unordered_map<int, size_t> MembersByRank(const WorkerGroup& group);

// The member a local finding names alone (by `member_of`), or nullopt: a global finding, one
// naming several ranks, or a rank outside the group.
std::optional<size_t> MemberNamedAlone(const std::unordered_map<int, size_t>& member_of, const Finding& f);

// Per member: whether a local finding names it alone.
std::vector<bool> NamedAlone(const WorkerGroup& group, const std::vector<Finding>& local);

// The least excess that makes a straggler: the floor IsOutlier (local_analysis.cc) sets for a group
// this size with 4 or more iterations.
double StragglerFloor(const WorkerGroup& group, const Expectations& e);

}  // namespace eroica
