// The critical path as a partition of the window: at each instant the owner is the function
// of the highest-priority layer active then (device compute > memory > communication > host
// ranges ...), and within a layer the innermost (latest-started) span.
#pragma once

#include <cstdint>
#include <vector>

#include "base/huge_page_allocator.h"

namespace eroica {

struct Span {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t function = 0;

  bool operator==(const Span&) const = default;
};

// Spans come by the million on long traces: their arrays take huge pages (a fresh process
// otherwise spends a fifth of its time faulting them in, 4 KB at a time).
using SpanList = BigVector<Span>;

// `layers` in priority order, highest first. Returns sorted, disjoint spans covering exactly
// [window_start_ns, window_end_ns); instants no layer covers go to `fill_function`.
SpanList PaintCriticalPath(std::vector<SpanList> layers, int64_t window_start_ns, int64_t window_end_ns,
                           uint32_t fill_function);

// One layer's own timeline: overlapping spans resolve to the innermost. Sorted, disjoint.
SpanList InnermostTimeline(SpanList spans);

}  // namespace eroica
