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
  double wait_share = 0;         // of all the others' waiting at the compared calls
  // Iterations whose waiting (summed over their calls) was mostly for it, of those compared;
  // 0 compared where the calls do not split evenly into the window's iterations.
  int iterations_compared = 0;
  int iterations_waited_for = 0;
  // The others waited for it in nearly every iteration and for nearly all their waiting
  // (WaitedForAcrossTheWindow): a slowness that did not move between ranks.
  bool across_the_window = false;
  std::string evidence;
};

// The rank that arrives last at (nearly) every collective, or that the others waited for
// across the window, when their wait for it is above the noise floor; nullopt otherwise (no
// collectives, ranks take turns, waits are small).
std::optional<LastArriver> FindLastArriver(const WorkerGroup& group, const Expectations& e);

}  // namespace eroica
