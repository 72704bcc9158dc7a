#include "report/annotation_plan.h"

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "trace/reader.h"

namespace eroica {
namespace {

std::vector<Span> MergeWithin(const std::vector<Span>& spans, int64_t gap_ns) {
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!out.empty() && s.start_ns - out.back().end_ns <= gap_ns) {
      out.back().end_ns = std::max(out.back().end_ns, s.end_ns);
    } else {
      out.push_back({s.start_ns, s.end_ns, 0});
    }
  }
  return out;
}

// The function indexes a finding marks: its function by name, else every function of its
// category that the pattern lists.
std::unordered_set<uint32_t> MarkedFunctions(const Summary& summary, const Finding& finding, bool* by_function) {
  std::unordered_set<uint32_t> marked;
  for (uint32_t i = 0; i < summary.function_names.size(); ++i) {
    if (summary.function_names[i] == finding.function) marked.insert(i);
  }
  *by_function = !marked.empty();
  if (*by_function) return marked;
  std::optional<Category> category = InfoOf(finding.category).resource;
  if (!category) {
    for (const FunctionPattern& f : summary.pattern.functions) {
      if (f.name == finding.function) category = f.category;
    }
  }
  if (!category) return marked;
  std::unordered_map<std::string, Category> categories;
  for (const FunctionPattern& f : summary.pattern.functions) categories[f.name] = f.category;
  for (uint32_t i = 0; i < summary.function_names.size(); ++i) {
    auto it = categories.find(summary.function_names[i]);
    if (it != categories.end() && it->second == *category) marked.insert(i);
  }
  return marked;
}

FindingMarks MarksFor(const Summary& summary, const Finding& finding, int index, bool names_rank, size_t max_marks) {
  FindingMarks out;
  out.finding = finding;
  out.index = index;
  out.names_this_rank = names_rank;
  std::unordered_set<uint32_t> marked = MarkedFunctions(summary, finding, &out.by_function);
  std::vector<Span> spans;
  for (const Span& s : summary.critical_path) {
    if (marked.count(s.function) == 0) continue;
    spans.push_back(s);
    out.owned_ns += s.end_ns - s.start_ns;
  }
  out.marks = MergeMarks(spans, max_marks);
  return out;
}

}  // namespace

std::vector<Span> MergeMarks(const std::vector<Span>& spans, size_t max_marks) {
  int64_t gap_ns = 1000;  // the critical path partitions time: only touching pieces merge at first
  std::vector<Span> merged = MergeWithin(spans, 0);
  while (merged.size() > std::max<size_t>(1, max_marks)) {
    merged = MergeWithin(merged, gap_ns);
    gap_ns *= 4;
  }
  return merged;
}

AnnotationPlan PlanAnnotation(const Summary& summary, int rank, int64_t base_time_ns, const Diagnosis& diagnosis,
                              const AnnotationOptions& options) {
  AnnotationPlan plan;
  plan.rank = rank;
  plan.base_time_ns = base_time_ns;
  plan.window_start_ns = summary.window_start_ns;
  plan.window_end_ns = summary.window_start_ns + summary.pattern.window_ns;
  for (size_t i = 0; i < diagnosis.findings.size() && plan.findings.size() < options.max_findings; ++i) {
    const Finding& f = diagnosis.findings[i];
    bool names_rank =
        f.scope == FindingScope::kGlobal || std::find(f.workers.begin(), f.workers.end(), rank) != f.workers.end();
    if (names_rank && f.category != FindingCategory::kHang) {
      plan.findings.push_back(MarksFor(summary, f, static_cast<int>(i) + 1, true, options.max_marks_per_finding));
    }
  }
  if (plan.findings.empty()) {
    for (size_t i = 0; i < diagnosis.findings.size() && plan.findings.size() < 3; ++i) {
      if (diagnosis.findings[i].category == FindingCategory::kHang) continue;
      plan.findings.push_back(
          MarksFor(summary, diagnosis.findings[i], static_cast<int>(i) + 1, false, options.max_marks_per_finding));
    }
  }
  return plan;
}

StatusOr<AnnotationPlan> PlanAnnotationForTrace(const std::string& trace_path, const Diagnosis& diagnosis,
                                                const AnnotationOptions& options) {
  StatusOr<Trace> trace = ReadTrace(trace_path);
  if (!trace.ok()) return trace.status();
  StatusOr<Summary> summary = Summarize(*trace);
  if (!summary.ok()) return summary.status();
  return PlanAnnotation(*summary, trace->meta.rank, trace->meta.base_time_ns, diagnosis, options);
}

}  // namespace eroica
