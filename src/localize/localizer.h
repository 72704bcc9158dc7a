// The localize module's facade: every worker's pattern (and hang stacks) in, a diagnosis out.
#pragma once

#include <string>
#include <vector>

#include "localize/expectations.h"
#include "localize/finding.h"
#include "localize/hang.h"
#include "summary/pattern.h"

namespace eroica {

struct LocalizeInput {
  std::vector<WorkerPattern> workers;
  std::vector<StackDump> stacks;
  std::vector<std::string> input_errors;  // unusable files, one line each
  int declared_world_size = 0;            // from session metadata, when known
};

Diagnosis Localize(const LocalizeInput& input, const Expectations& expectations);

}  // namespace eroica
