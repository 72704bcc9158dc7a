// The two clocks the agent uses: CLOCK_REALTIME stamps samples (unix ns, as traces use),
// CLOCK_MONOTONIC paces the sampling loops (immune to clock steps).
#pragma once

#include <time.h>

#include <cstdint>

namespace eroica::agent {

inline int64_t ClockNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}
inline int64_t RealtimeNs() { return ClockNs(CLOCK_REALTIME); }
inline int64_t MonotonicNs() { return ClockNs(CLOCK_MONOTONIC); }

// CLOCK_REALTIME − CLOCK_MONOTONIC, read as a tight pair (the smallest bracket of three).
int64_t RealtimeMinusMonotonicNs();

// Sleeps until the monotonic time deadline_ns (absolute); returns early on a signal.
void SleepUntilMonotonicNs(int64_t deadline_ns);

// CPU time this process has used (user + system), ns.
int64_t ProcessCpuNs();

}  // namespace eroica::agent
