// Workers are compared only with their like (docs/DESIGN.md "Compare only like with like"): data-
// parallel ranks run the same functions; pipeline stages or parameter servers do not.
#pragma once

#include <utility>
#include <vector>

#include "localize/worker_table.h"

namespace eroica {

struct WorkerGroup {
  const WorkerTable* table = nullptr;
  std::vector<uint32_t> members;  // indices into the table

  size_t size() const { return members.size(); }
  const WorkerRow& row(size_t k) const { return table->row(members[k]); }
  std::span<const FunctionEntry> functions(size_t k) const { return table->functions(members[k]); }
};

// Groups by kind of run (GPU or CPU), declared role (WorkerPattern::group) and what they run:
// the operations they call and their collectives (names and counts), never their timings.
std::vector<WorkerGroup> GroupWorkers(const WorkerTable& table);

// Whether every member of the group sends and receives point-to-point (a pipeline stage).
bool ExchangesPointToPoint(const WorkerGroup& group);

// Views over a group, indexed like `members`.
double MedianIterationS(const WorkerGroup& group);
std::vector<double> CategoryBetas(const WorkerGroup& group, Category category);
// β of each requested function on every worker of the group (0 where a worker does not run
// it), gathered in one pass over the group.
std::vector<std::vector<double>> FunctionBetaColumns(const WorkerGroup& group,
                                                     const std::vector<std::pair<StringId, Category>>& functions);

}  // namespace eroica
