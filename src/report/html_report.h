// The HTML report: one self-contained page (inline CSS and SVG, no JavaScript, no network)
// that puts the verdict first (one sentence per finding: who, what, how much per iteration,
// what next), then each finding's evidence and charts, a workers × functions heat map, the
// online trigger's iteration times when the folder is a session, and data-quality warnings.
// Every string that came from a trace, a stack or a file name is escaped.
#pragma once

#include <string>
#include <vector>

#include "diff/pattern_diff.h"
#include "localize/finding.h"
#include "report/session_info.h"
#include "summary/pattern.h"

namespace eroica {

struct HtmlReportContext {
  std::string source;                     // what was diagnosed (paths), shown in the header
  std::string generated_at;               // "2025-01-31 12:00 UTC"; empty leaves it out (tests)
  const PatternDiff* baseline = nullptr;  // `report --baseline`: what changed since
};

std::string RenderHtmlReport(const Diagnosis& diagnosis, const std::vector<WorkerPattern>& workers,
                             const SessionInfo& session, const HtmlReportContext& context);

}  // namespace eroica
