// What `eroica annotate` adds to a trace: for each finding that concerns the trace's rank, the
// stretches of the critical path its function (or, failing that, its category) owns, merged
// into a bounded number of marks. Computed from one pass of the summarizer over the trace,
// which is then released before the trace is copied through (annotate.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "localize/finding.h"
#include "summary/critical_path.h"
#include "summary/summarizer.h"

namespace eroica {

struct FindingMarks {
  Finding finding;
  int index = 0;                // 1-based, as in the diagnosis
  bool names_this_rank = true;  // false when the finding is about other ranks
  bool by_function = true;      // false: marked by category (the function was not in this trace)
  std::vector<Span> marks;      // merged, sorted; Span::function unused
  int64_t owned_ns = 0;         // critical-path time marked, before merging gaps
};

struct AnnotationPlan {
  int rank = -1;
  int64_t base_time_ns = 0;  // subtract to get back to the file's own timestamps
  int64_t window_start_ns = 0;
  int64_t window_end_ns = 0;
  std::vector<FindingMarks> findings;
};

struct AnnotationOptions {
  size_t max_marks_per_finding = 20000;  // beyond, nearby marks are merged
  size_t max_findings = 5;
};

// The marks for `summary` (one worker's critical path). Findings naming the rank come first;
// when none does, the top findings are marked anyway, flagged as about other ranks.
AnnotationPlan PlanAnnotation(const Summary& summary, int rank, int64_t base_time_ns, const Diagnosis& diagnosis,
                              const AnnotationOptions& options = {});

// Reads and summarizes the trace, then plans.
StatusOr<AnnotationPlan> PlanAnnotationForTrace(const std::string& trace_path, const Diagnosis& diagnosis,
                                                const AnnotationOptions& options = {});

// Merges sorted spans whose gaps are at most gap_ns, widening the gap until at most max remain.
std::vector<Span> MergeMarks(const std::vector<Span>& spans, size_t max_marks);

}  // namespace eroica
