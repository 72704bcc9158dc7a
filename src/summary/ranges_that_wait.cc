#include "summary/ranges_that_wait.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace eroica {
namespace {

struct Launch {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t next_start_ns = std::numeric_limits<int64_t>::max();  // the thread's next event after it
  int64_t backend_start_ns = -1;                                // the backend's range for it
  int64_t backend_end_ns = -1;
};

bool MayWait(EventRole role) { return role == EventRole::kCpuOp || role == EventRole::kAnnotation; }

}  // namespace

void DropRangesThatWaitForACollective(const Trace& trace, const WorkerWindow& window, BigVector<EventRole>* roles) {
  if (window.main_tid < 0) return;
  auto on_thread = [&](const TraceEvent& e) { return e.pid == window.main_pid && e.tid == window.main_tid; };
  std::vector<Launch> launches;
  std::vector<std::pair<int64_t, int64_t>> backend;  // (start, end) of the backend's ranges
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    if ((*roles)[i] != EventRole::kCpuComm || e.pid != window.main_pid) continue;
    if (e.tid == window.main_tid) {
      launches.push_back({e.ts_ns, e.end_ns()});
    } else {
      backend.emplace_back(e.ts_ns, e.end_ns());
    }
  }
  if (launches.empty() || backend.empty()) return;
  // One thread's launches never overlap: sorted by start, they are sorted by end too.
  std::sort(launches.begin(), launches.end(), [](const Launch& a, const Launch& b) { return a.start_ns < b.start_ns; });
  std::sort(backend.begin(), backend.end());
  // Each launch's collective is the backend's first range to start after it: the backend runs a
  // group's collectives in launch order, and a range of another group that starts in the few
  // microseconds between a launch and its own range ends long after a range that did not wait.
  for (Launch& launch : launches) {
    auto it = std::lower_bound(backend.begin(), backend.end(), std::pair{launch.start_ns, int64_t{-1}});
    if (it == backend.end()) continue;
    launch.backend_start_ns = it->first;
    launch.backend_end_ns = it->second;
  }
  // The thread's next event after each launch: each event is offered to the last launch that
  // ended before it starts, then handed on to the launches before that one.
  auto last_launch_before = [&](int64_t at_ns, bool by_end) {
    auto it = std::upper_bound(launches.begin(), launches.end(), at_ns,
                               [by_end](int64_t t, const Launch& l) { return t < (by_end ? l.end_ns : l.start_ns); });
    return it == launches.begin() ? launches.size() : static_cast<size_t>(it - launches.begin()) - 1;
  };
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    EventRole role = (*roles)[i];
    if (!on_thread(e) || role == EventRole::kIgnore || role == EventRole::kStepMarker) continue;
    size_t k = last_launch_before(e.ts_ns, /*by_end=*/true);
    if (k < launches.size()) launches[k].next_start_ns = std::min(launches[k].next_start_ns, e.ts_ns);
  }
  for (size_t k = launches.size() - 1; k-- > 0;) {
    launches[k].next_start_ns = std::min(launches[k].next_start_ns, launches[k + 1].next_start_ns);
  }
  // A range waits when its thread blocked on its last launch (recorded nothing more until the
  // collective was half done) and it ran on past that point. The middle of the backend's range
  // tells a wait from a launch that returned: a range that launched and went on records its next
  // op microseconds later, long before a collective with other ranks is half done. Its end may
  // come after the range's (gloo records it after waking the thread) and ops may follow the wait
  // inside the range (autograd's view_as of a Function's output): neither is what it waited for.
  std::vector<std::pair<size_t, size_t>> annotations;  // (event, its launch): blocked annotations
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    EventRole role = (*roles)[i];
    if (!MayWait(role) || !on_thread(e)) continue;
    size_t k = last_launch_before(e.end_ns() - 1, /*by_end=*/false);
    if (k == launches.size()) continue;
    const Launch& launch = launches[k];
    if (launch.backend_end_ns < 0 || launch.start_ns < e.ts_ns || launch.end_ns > e.end_ns()) continue;
    int64_t middle_ns = launch.backend_start_ns + (launch.backend_end_ns - launch.backend_start_ns) / 2;
    if (launch.next_start_ns < middle_ns || e.end_ns() <= middle_ns) continue;  // did not block
    // An op's own time is compute, which would hide the wait: any op that blocked is dropped.
    if (role == EventRole::kCpuOp) {
      (*roles)[i] = EventRole::kIgnore;
    } else {
      annotations.emplace_back(i, k);
    }
  }
  if (annotations.empty()) return;
  // An annotation (the lowest layer) only where it records less work after the wait than the
  // wait took: a range around a model's forward that begins with a buffer broadcast keeps its
  // name. Its work, not its length: a Function's forward records a view after the wait (20 us),
  // but on a busy node its thread may take milliseconds to come back to it, and its length then
  // swings from call to call (a TP job's ReduceFromTP: the wait under half of its length in 153
  // of 900 calls, its work after the wait as long as the wait in 2).
  std::vector<std::pair<int64_t, int64_t>> ops;  // (start, duration) of the thread's recorded work
  for (size_t i = 0; i < trace.events.size(); ++i) {
    const TraceEvent& e = trace.events[i];
    EventRole role = (*roles)[i];
    if (on_thread(e) && role != EventRole::kIgnore && role != EventRole::kStepMarker)
      ops.emplace_back(e.ts_ns, e.dur_ns);
  }
  std::sort(ops.begin(), ops.end());
  std::vector<int64_t> work_before(ops.size() + 1, 0);  // nested ops counted again: an upper bound
  for (size_t j = 0; j < ops.size(); ++j) work_before[j + 1] = work_before[j] + ops[j].second;
  auto work_between = [&](int64_t from_ns, int64_t to_ns) {
    auto first = std::lower_bound(ops.begin(), ops.end(), std::pair{from_ns, INT64_MIN});
    auto last = std::lower_bound(ops.begin(), ops.end(), std::pair{to_ns, INT64_MIN});
    return work_before[static_cast<size_t>(last - ops.begin())] - work_before[static_cast<size_t>(first - ops.begin())];
  };
  for (auto [i, k] : annotations) {
    const Launch& launch = launches[k];
    if (work_between(launch.end_ns, trace.events[i].end_ns()) < launch.backend_end_ns - launch.start_ns) {
      (*roles)[i] = EventRole::kIgnore;
    }
  }
}

}  // namespace eroica
