// The localize module's facade: every worker's pattern (and hang stacks) in, a diagnosis out.
#pragma once

#include <string>
#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/hang.h"
#include "localize/worker_table.h"
#include "summary/pattern.h"

namespace eroica {

// The largest world size believed (1,048,576; diagnose is measured up to 1,000,000 workers). A
// declared size above it — from a trace, a pattern, session.json or a stack dump — is cut to
// it with a warning, so a forged number never fills a list that long.
inline constexpr int kMaxWorldSize = 1 << 20;

struct LocalizeInput {
  WorkerTable table;                         // what localization compares
  std::vector<WorkerPattern> workers;        // full patterns, when the caller keeps them (reports)
  std::vector<std::string> worker_warnings;  // "rank R: ..." data-quality notes, capped
  std::vector<StackDump> stacks;
  std::vector<std::string> input_errors;  // unusable files, one line each
  int declared_world_size = 0;            // from session metadata, when known

  // Adds a worker to the table (and keeps the full pattern when asked).
  void AddWorker(WorkerPattern&& worker, bool keep_pattern);
};

Diagnosis Localize(const LocalizeInput& input, const Expectations& expectations);

// The local findings of the role group holding `rank` (none where it has no group of 3 or more),
// with the others' waits for it taken as a straggler's across the window, whatever its share of
// their waiting (collective_waits.h FindLastArriver): where the job's own past says the slowness
// stayed with it (diff/grown_wait.h). Located at the hottest code where the samples say.
std::vector<Finding> LocalFindingsWaitedAcross(const WorkerTable& table, int rank, const Expectations& expectations);

}  // namespace eroica
