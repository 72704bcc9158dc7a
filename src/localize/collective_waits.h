// Who the others wait for. At each collective every rank waits until the last one arrives, so
// the last to arrive has the shortest call; the others' extra time is waiting for it. Aligning
// the ranks' collective calls by issue order names the straggler even when its delay began
// before the profiled window.
#pragma once

#include <optional>
#include <string>

#include "localize/expectations.h"
#include "localize/groups.h"

namespace eroica {

struct LastArriver {
  size_t member = 0;  // index into group.members
  int calls_compared = 0;
  int calls_last = 0;            // calls where it arrived last
  double waited_s_per_iter = 0;  // the others' median wait for it, per iteration
  std::string evidence;
};

// The rank that arrives last at (nearly) every collective, when the others' wait for it is
// above the noise floor; nullopt otherwise (no collectives, ranks take turns, waits are small).
std::optional<LastArriver> FindLastArriver(const WorkerGroup& group, const Expectations& e);

}  // namespace eroica
