// Writes a trace back out with eroica's findings added, so it opens in Perfetto UI or
// chrome://tracing with the culprit marked. The input is streamed (trace/json_splitter.h):
// its events are copied through byte for byte, never held in memory, then the added events
// follow: a process named "eroica" (numeric pid kEroicaPid: Perfetto reads only numeric pids)
// with one track per finding, holding a complete event for each stretch of the critical path
// the finding's function owns, and a global instant carrying the finding's sentence.
// A bare event list comes out as a Kineto-style object {"traceEvents": [...]}; other top-level
// keys are kept. Output ending in ".gz" is gzip-compressed.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "report/annotation_plan.h"

namespace eroica {

inline constexpr int64_t kEroicaPid = 900000000;  // above any Linux pid_max

struct AnnotateResult {
  int64_t events_copied = 0;
  int64_t events_added = 0;
  bool input_truncated = false;
};

// The added events, as JSON array elements separated by commas (no brackets).
std::string AnnotationEventsJson(const AnnotationPlan& plan, int total_workers, int64_t* count);

StatusOr<AnnotateResult> WriteAnnotatedTrace(const std::string& trace_path, const AnnotationPlan& plan,
                                             int total_workers, const std::string& output_path);

}  // namespace eroica
