// The summary module's facade: one worker's trace in, its behaviour pattern out.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "summary/critical_path.h"
#include "summary/pattern.h"
#include "summary/stack_samples.h"
#include "summary/utilization_stats.h"
#include "trace/trace.h"

namespace eroica {

struct SummarizeOptions {
  size_t max_functions = 48;             // the rest are folded into one "(other <category>)" each
  std::vector<ResourceSamples> samples;  // hardware utilisation in the trace's clock, for μ, σ
  StackSamples stack_samples;            // the window's Python stacks on the trace's clock, for hot frames
  // The critical path is painted in time slices of about this many spans (768 KB of them: a
  // slice's work stays in the cache), so only one slice's spans are held; a trace of at most
  // `one_slice_events` events (most real ones, up to about 50 MB of JSON) is one slice painted
  // straight from its events, with no slice index.
  size_t spans_per_slice = size_t{1} << 15;
  size_t one_slice_events = size_t{1} << 17;
};

// The pattern plus the critical path it was computed from (for reports and annotations).
struct Summary {
  WorkerPattern pattern;
  CriticalPath critical_path;               // partition of the window; Span::function indexes names
  std::vector<std::string> function_names;  // before pruning
  int64_t window_start_ns = 0;
};

StatusOr<Summary> Summarize(const Trace& trace, const SummarizeOptions& options = {});

}  // namespace eroica
