// Where in the job's code a finding points: the hang suspect's stack, a location the finding
// names, a Python function name from a with_stack trace ("file.py:123(func)"), or the Python
// frames the suspect spends more time in than its peers.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "localize/finding.h"
#include "localize/hang.h"
#include "summary/pattern.h"

namespace eroica {

struct CodeLocation {
  std::string file;
  int line = 0;
  std::string function;
  std::string code;  // the line's text as the stack captured it, when it did
  std::string why;   // "where rank 1 is stuck", "Python frame on rank 1's critical path ..."
};

// "file.py:123", "file.py:123(func)" and Kineto's "file.py(123): func".
std::optional<CodeLocation> ParseCodeLocation(std::string_view text);

// The locations for a finding, most specific first, at most `max_locations`.
std::vector<CodeLocation> FindingLocations(const Finding& finding, const std::vector<WorkerPattern>& workers,
                                           const std::vector<StackDump>& stacks, size_t max_locations = 4);

// The dump of `rank`, or nullptr.
const StackDump* DumpOfRank(const std::vector<StackDump>& stacks, int rank);

}  // namespace eroica
