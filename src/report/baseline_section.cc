#include "report/baseline_section.h"

#include <fmt/core.h>

#include "diff/diff_report.h"
#include "report/html_escape.h"

namespace eroica {
namespace {

constexpr size_t kMaxRows = 12;

std::string Row(const PatternChange& c) {
  std::string per_call = c.base_calls_per_iter > 0 || c.now_calls_per_iter > 0
                             ? fmt::format("{:.3f} → {:.3f}", c.base_ms_per_call, c.now_ms_per_call)
                             : "";
  return fmt::format(
      "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f} → {:.1f}</td><td>{:+.1f}</td>"
      "<td>{}</td></tr>\n",
      EscapeHtml(c.function), CategoryName(c.category), Name(c.kind), EscapeHtml(RanksText(c.ranks)),
      c.base_ms_per_iter, c.now_ms_per_iter, c.delta_ms_per_iter, per_call);
}

}  // namespace

std::string BaselineSectionHtml(const PatternDiff* diff) {
  if (diff == nullptr) return "";
  std::string out = "<section id=\"baseline\"><h2>Against the baseline</h2>\n";
  out += fmt::format(
      "<p>Iteration {:.1f} ms at the baseline, {:.1f} ms now ({:+.1f} ms). Changes that clear the "
      "noise bar (3 robust spreads across like workers, 5 % of the iteration, outside the "
      "baseline's range of like workers):</p>\n",
      diff->base.iteration_ms, diff->now.iteration_ms, diff->now.iteration_ms - diff->base.iteration_ms);
  if (diff->functions.empty()) {
    out += "<p class=\"ok\">No function changed above noise.</p>\n";
  } else {
    out +=
        "<table "
        "class=\"numbers\"><tr><th>function</th><th>category</th><th>change</th><th>ranks</th>"
        "<th>ms/iter</th><th>Δ ms/iter</th><th>ms/call</th></tr>\n";
    for (size_t i = 0; i < diff->functions.size() && i < kMaxRows; ++i) out += Row(diff->functions[i]);
    out += "</table>\n";
    if (diff->functions.size() > kMaxRows) {
      out += fmt::format("<p class=\"meta\">… and {} more (eroica diff lists them all).</p>\n",
                         diff->functions.size() - kMaxRows);
    }
  }
  for (const std::string& note : diff->notes) {
    out += fmt::format("<p class=\"meta\">Note: {}</p>\n", EscapeHtml(note));
  }
  return out + "</section>\n";
}

}  // namespace eroica
