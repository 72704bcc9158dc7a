// Who the others wait for. At each collective every rank waits until the last one arrives, so
// the last to arrive has the shortest call; the others' extra time is waiting for it. Aligning
// the ranks' collective calls by issue order names the straggler even when its delay began
// before the profiled window.
#pragma once

#include <optional>
#include <string>
#include <vector>

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
  // 0 compared where the calls' iterations are unknown (CountIterationsWaitedFor).
  int iterations_compared = 0;
  int iterations_waited_for = 0;
  // The others waited for it in nearly every iteration and for nearly all their waiting
  // (WaitedForAcrossTheWindow): a slowness that did not move between ranks.
  bool across_the_window = false;
  std::string evidence;
};

// A rank the others waited for across the window was waited for mostly in at least this share of
// its iterations (collective_waits.cc says why).
inline constexpr double kAcrossIterationsShare = 0.8;

// The others' waits at the group's aligned collectives, by whom they waited for: at each call the
// last to arrive (the shortest call) and the others' median wait for it.
struct CollectiveWaits {
  std::vector<size_t> last_at;             // per call: the member that arrived last
  std::vector<double> wait_at;             // per call: the others' median wait for it, us
  std::vector<double> waited_us;           // per member: the waits for it, summed
  std::vector<int> calls_last;             // per member: the calls where it arrived last
  std::vector<int> iterations_waited_for;  // per member: iterations whose waiting was mostly for it
  int iterations = 0;                      // iterations with a compared call; 0 where the calls' iterations are unknown

  size_t calls() const { return last_at.size(); }
  // The others' wait for `member` per iteration of the window, seconds.
  double WaitedSPerIter(const WorkerGroup& group, size_t member) const;
};
CollectiveWaits ReadCollectiveWaits(const WorkerGroup& group);

// The rank that arrives last at (nearly) every collective, or that the others waited for
// across the window, when their wait for it is above the noise floor; nullopt otherwise (no
// collectives, ranks take turns, waits are small). `waited_across`: a member the job's past says
// the others waited for across the window (diff/grown_wait.h), taken so where it is the member
// waited for most, whatever its share of the waiting.
std::optional<LastArriver> FindLastArriver(const WorkerGroup& group, const Expectations& e,
                                           std::optional<size_t> waited_across = std::nullopt);

// Each rank's reading of the others' waits for it, in its role group (GroupWorkers) of 3 or more:
// where the waiting has somewhere else to go, it says who held them up.
struct RankWaits {
  int rank = 0;
  double waited_s_per_iter = 0;   // the others' waits for it (CollectiveWaits::WaitedSPerIter)
  double wait_share = 0;          // of all the waiting in its group
  int iterations_waited_for = 0;  // iterations whose waiting was mostly for it
  int iterations = 0;             // compared in its group (0: none)
  double group_iteration_s = 0;   // its group's median iteration
  size_t group_size = 0;
};
std::vector<RankWaits> WaitsForEachRank(const WorkerTable& table);

}  // namespace eroica
