#include "report/text_report.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace eroica {
namespace {

std::string WorkersText(const Finding& f, int total) {
  if (f.workers.empty()) return "-";
  if (f.scope == FindingScope::kGlobal && static_cast<int>(f.workers.size()) >= total && total > 1) {
    return fmt::format("all {} ranks", total);
  }
  if (f.workers.size() == 1) return fmt::format("rank {}", f.workers[0]);
  if (f.workers.size() <= 8) return fmt::format("ranks {}", fmt::join(f.workers, ","));
  return fmt::format("{} ranks", f.workers.size());
}

std::string FindingLine(const Finding& f, int workers) {
  std::string impact =
      f.category == FindingCategory::kHang ? "stuck" : fmt::format("{:.1f} ms/iter", f.impact_s_per_iter * 1e3);
  std::string where = f.location.empty() ? f.function : fmt::format("{} at {}", f.function, f.location);
  return fmt::format("{} {} {}: {} — {} lost{}", Name(f.scope), Name(f.category), WorkersText(f, workers), where,
                     impact, f.standing ? " (as at the baseline)" : "");
}

// ", but slower: ..." where something outside the job made it slower (Diagnosis::slowed_by).
std::string SlowedByText(const Diagnosis& d) {
  return d.slowed_by.empty() ? std::string() : fmt::format(" in the job, but slower: {}", d.slowed_by);
}

}  // namespace

std::string OneLineVerdict(const Diagnosis& d) {
  if (d.healthy()) {
    return fmt::format("healthy: no problem found on {} workers{}", d.workers, SlowedByText(d));
  }
  return FindingLine(d.findings.front(), d.workers);
}

std::string FormatTextReport(const Diagnosis& d) {
  std::string out;
  if (d.healthy()) {
    out += fmt::format("eroica: healthy — no problem found on {} workers{}\n", d.workers, SlowedByText(d));
  } else {
    // Against a baseline, what changed since leads (diff/standing_costs.h).
    auto is_standing = [](const Finding& f) { return f.standing; };
    bool standing = std::any_of(d.findings.begin(), d.findings.end(), is_standing) &&
                    !std::all_of(d.findings.begin(), d.findings.end(), is_standing);
    out += fmt::format("eroica: {} problem{} on {} workers, {}\n", d.findings.size(), d.findings.size() == 1 ? "" : "s",
                       d.workers, standing ? "what changed since the baseline first" : "most impactful first");
    for (size_t i = 0; i < d.findings.size(); ++i) {
      out += fmt::format("{}. {}\n", i + 1, FindingLine(d.findings[i], d.workers));
    }
    out += "\n";
    for (size_t i = 0; i < d.findings.size(); ++i) {
      const Finding& f = d.findings[i];
      out += fmt::format("{}. evidence: {}\n", i + 1, f.evidence);
      if (!f.action.empty()) out += fmt::format("   next: {}\n", f.action);
    }
  }
  for (const std::string& note : d.notes) out += fmt::format("note: {}\n", note);
  for (const std::string& warning : d.warnings) out += fmt::format("warning: {}\n", warning);
  return out;
}

}  // namespace eroica
