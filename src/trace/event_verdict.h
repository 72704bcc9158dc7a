// What becomes of an event once its fields are read, one rule for both parsers: a complete
// ("X") event with sane times is kept; every other phase and every unusable event is counted in
// the read stats (bad input is data, not an error).
#pragma once

#include <cstdint>

#include "trace/trace.h"

namespace eroica {

enum class EventVerdict { kKeep, kCounted, kNoPhase };

EventVerdict JudgeEvent(char phase, bool has_ts, bool has_dur, bool bad_number, int64_t dur_ns, ReadStats* stats);

}  // namespace eroica
