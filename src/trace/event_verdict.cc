#include "trace/event_verdict.h"

namespace eroica {

EventVerdict JudgeEvent(char phase, bool has_ts, bool has_dur, bool bad_number, int64_t dur_ns, ReadStats* stats) {
  switch (phase) {
    case 'X':
      break;
    case 'i':
    case 'I':
      ++stats->instant_events;
      return EventVerdict::kCounted;
    case 's':
    case 'f':
    case 't':
      ++stats->flow_events;
      return EventVerdict::kCounted;
    case 'M':
      ++stats->metadata_events;
      return EventVerdict::kCounted;
    case 'C':
      ++stats->counter_events;
      return EventVerdict::kCounted;
    case 0:
      return EventVerdict::kNoPhase;
    default:
      ++stats->other_phase_events;
      return EventVerdict::kCounted;
  }
  if (bad_number) {
    ++stats->absurd_timestamp;
    return EventVerdict::kCounted;
  }
  if (!has_ts || !has_dur) {
    ++stats->missing_timestamp;
    return EventVerdict::kCounted;
  }
  if (dur_ns < 0) {
    ++stats->negative_duration;
    return EventVerdict::kCounted;
  }
  return EventVerdict::kKeep;
}

}  // namespace eroica
