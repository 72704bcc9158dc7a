#include "agent/clock.h"

#include <cerrno>

namespace eroica::agent {

int64_t RealtimeMinusMonotonicNs() {
  int64_t best_offset = 0;
  int64_t best_bracket = INT64_MAX;
  for (int i = 0; i < 3; ++i) {
    int64_t before = MonotonicNs();
    int64_t realtime = RealtimeNs();
    int64_t after = MonotonicNs();
    if (after - before < best_bracket) {
      best_bracket = after - before;
      best_offset = realtime - (before + (after - before) / 2);
    }
  }
  return best_offset;
}

void SleepUntilMonotonicNs(int64_t deadline_ns) {
  timespec deadline{};
  deadline.tv_sec = deadline_ns / 1'000'000'000;
  deadline.tv_nsec = deadline_ns % 1'000'000'000;
  clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, nullptr);
}

int64_t ProcessCpuNs() { return ClockNs(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace eroica::agent
