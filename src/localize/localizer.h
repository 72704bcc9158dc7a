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

struct LocalizeInput {
  WorkerTable table;                          // what localization compares
  std::vector<WorkerPattern> workers;         // full patterns, when the caller keeps them (reports)
  std::vector<std::string> worker_warnings;   // "rank R: ..." data-quality notes, capped
  std::vector<StackDump> stacks;
  std::vector<std::string> input_errors;      // unusable files, one line each
  int declared_world_size = 0;                // from session metadata, when known

  // Adds a worker to the table (and keeps the full pattern when asked).
  void AddWorker(WorkerPattern&& worker, bool keep_pattern);
};

Diagnosis Localize(const LocalizeInput& input, const Expectations& expectations);

}  // namespace eroica
