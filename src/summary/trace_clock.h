// Maps a trace's timestamps onto the host's wall clock (unix ns), for what the training process
// recorded beside the trace: the node agent's hardware samples, the window's Python stacks.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>

#include "trace/trace.h"

namespace eroica {

// unix ns = trace ns + offset. Kineto's epoch timestamps need none (0). CPU-only traces count
// from the profiler's start: `anchors` (a rank's meta or stack file) then gives the host time
// each ProfilerStep#N opened ("step_start_unix_ns": {"N": ns}; the median over the steps), else
// the profiler's start ("profiler_start_unix_ns"). nullopt when nothing anchors them.
std::optional<int64_t> UnixClockOffset(const Trace& trace, const nlohmann::json* anchors);

}  // namespace eroica
