// Maps a trace's timestamps onto the host's wall clock (unix ns), for what the training process
// recorded beside the trace: the node agent's hardware samples, the window's Python stacks.
#pragma once

#include <cstdint>
#include <optional>

#include "base/json_access.h"
#include "trace/trace.h"

namespace eroica {

// unix ns = trace ns + offset. First from the host time each ProfilerStep#N opened, when
// `anchors` (a rank's meta or stack file) has them ("step_start_unix_ns": {"N": ns}; the median
// over the steps): the same clock as what was recorded beside the trace, whatever clock the
// profiler uses. Else Kineto's epoch timestamps need none (0), and CPU-only traces, which count
// from the profiler's start, take "profiler_start_unix_ns". nullopt when nothing anchors them.
std::optional<int64_t> UnixClockOffset(const Trace& trace, const Json* anchors);

}  // namespace eroica
