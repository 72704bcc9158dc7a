// What the training process wrote beside its trace about itself (python/eroica/capture.py:
// rank-<r>.meta.json): its pid, host and the host time each profiled step opened. A torch 1.13
// CPU trace is a bare event array that names none of these.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/json_access.h"
#include "trace/trace.h"

namespace eroica {

// The rank's meta file beside the trace (bounded read), or nullopt without one or a readable one.
std::optional<Json> ReadRankMeta(const Trace& trace);

// The host the rank ran on, from its meta file ("" when not named): ranks on one host share its
// processors, which a CPU-only trace cannot say by itself.
std::string RankMetaHost(const Json& meta);

// The iterations that ended inside the window (`iteration_ids`), in the file's order. A window the
// job's exit cut short holds one more ProfilerStep, opened at the last boundary and closed by the
// exit: the loop's end, the process group's teardown. Read as a step, a healthy 3-rank job's last
// session (its only iteration 200 and that tail) named the tail `global host` at the script's
// `main()` call, 15.6 ms a step.
std::vector<int64_t> RankMetaCompletedSteps(const Json& meta);

// Why the rank missed the session's window, as its meta says (`missed`: the job ended before its
// target iteration, or before an iteration of the window ended; another profiler was active...),
// "" when it took part; the same where the exit stopped the window before any iteration of it ended
// (`stop_reason` "exit", no `iteration_ids`: an older package's meta). Its trace, where one was
// written, holds no step to compare.
std::string RankMetaMissed(const Json& meta);

}  // namespace eroica
