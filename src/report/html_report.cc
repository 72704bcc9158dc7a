#include "report/html_report.h"

#include <fmt/core.h>

#include <algorithm>

#include "report/baseline_section.h"
#include "report/finding_charts.h"
#include "report/heatmap.h"
#include "report/html_escape.h"
#include "report/report_style.h"
#include "report/run_figures.h"
#include "report/session_chart.h"
#include "report/svg_heatmap.h"
#include "report/verdict.h"

namespace eroica {
namespace {

std::string Badge(const Finding& f) {
  std::string_view kind = f.category == FindingCategory::kHang ? Name(f.category) : Name(f.scope);
  return fmt::format("<span class=\"badge {}\">{} {}</span>", kind, Name(f.scope), Name(f.category));
}

std::string Header(const Diagnosis& d, const std::vector<WorkerPattern>& workers, const SessionInfo& s,
                   const HtmlReportContext& context) {
  std::string title =
      d.healthy() ? "healthy" : fmt::format("{} problem{}", d.findings.size(), d.findings.size() == 1 ? "" : "s");
  std::string out = fmt::format("<header><h1>eroica report <span>· {}</span></h1>\n", title);
  std::string facts = fmt::format("{} workers diagnosed", d.workers);
  if (d.world_size > 0) facts += fmt::format(" · world size {}", d.world_size);
  if (!workers.empty()) {
    facts += fmt::format(" · {} profiled iteration{} of {} (median)", workers.front().iterations(),
                         workers.front().iterations() == 1 ? "" : "s", FormatDuration(MedianIterationSeconds(workers)));
  }
  out += fmt::format("<p class=\"meta\">{} · <code>{}</code></p>\n", facts, EscapeHtml(context.source));
  if (s.has_session) {
    std::string line =
        fmt::format("online session <code>{}</code>: {}", EscapeHtml(s.session_id), EscapeHtml(s.reason));
    if (s.trigger_rank >= 0) line += fmt::format(" detected by rank {}", s.trigger_rank);
    if (s.detected_iteration >= 0) line += fmt::format(" at iteration {}", s.detected_iteration);
    if (s.stuck_iteration >= 0) line += fmt::format(", stuck in iteration {}", s.stuck_iteration);
    if (s.target_iteration >= 0 && s.reason != "hang")
      line += fmt::format("; profiled from iteration {}", s.target_iteration);
    out += fmt::format("<p class=\"meta\">{}</p>\n", line);
  }
  return out + "</header>\n";
}

std::string Verdict(const Diagnosis& d) {
  if (d.healthy()) {
    return fmt::format(
        "<section id=\"verdict\" class=\"verdict good\"><h2>Verdict</h2><p class=\"sentence ok\">"
        "Healthy: no problem found on {} workers{}.</p></section>\n",
        d.workers, d.slowed_by.empty() ? std::string() : " in the job, but slower: " + EscapeHtml(d.slowed_by));
  }
  std::string out = "<section id=\"verdict\" class=\"verdict bad\"><h2>Verdict: what to fix first</h2><ol>\n";
  for (size_t i = 0; i < d.findings.size(); ++i) {
    const Finding& f = d.findings[i];
    out += fmt::format(
        "<li class=\"finding\" data-category=\"{}\" data-workers=\"{}\">{}<span class=\"sentence\">{}</span>",
        Name(f.category), f.workers.size(), Badge(f), EscapeHtml(FindingSentence(f, d.workers)));
    if (!f.action.empty()) out += fmt::format("<span class=\"next\">Next: {}</span>", EscapeHtml(f.action));
    out += fmt::format(" <a href=\"#finding-{}\">evidence</a></li>\n", i + 1);
  }
  return out + "</ol></section>\n";
}

std::string NumbersTable(const Finding& f) {
  std::string workers;
  for (size_t i = 0; i < f.workers.size() && i < 32; ++i) workers += (i ? ", " : "") + std::to_string(f.workers[i]);
  if (f.workers.size() > 32) workers += fmt::format(" … ({} in all)", f.workers.size());
  std::string rows;
  auto row = [&](const char* name, const std::string& html) {
    rows += fmt::format("<tr><th>{}</th><td>{}</td></tr>", name, html);
  };
  row("ranks", workers.empty() ? "–" : workers);
  if (!f.function.empty()) row("function", fmt::format("<code>{}</code>", EscapeHtml(f.function)));
  if (!f.location.empty()) row("location", fmt::format("<code>{}</code>", EscapeHtml(f.location)));
  if (f.category != FindingCategory::kHang) {
    row("impact", fmt::format("{} per iteration", FormatDuration(f.impact_s_per_iter)));
    row(f.scope == FindingScope::kGlobal ? "β (median) vs expected" : "β vs peer median",
        fmt::format("{:.4f} vs {:.4f}", f.beta, f.peer_beta));
    row("distances", fmt::format("expectation D = {:.3f}, differential Δ = {:.2f}", f.expectation_distance,
                                 f.differential_distance));
  }
  return "<table class=\"numbers\">" + rows + "</table>\n";
}

std::string Figure(const std::string& svg, const std::string& caption) {
  if (svg.empty()) return "";
  return fmt::format("<figure><div class=\"scroll\">{}</div><figcaption>{}</figcaption></figure>\n", svg, caption);
}

std::string FindingSection(const Finding& f, size_t index, const Diagnosis& d,
                           const std::vector<WorkerPattern>& workers) {
  std::string out = fmt::format("<section class=\"evidence-section\" id=\"finding-{}\"><h3>{}. {}{}</h3>\n", index + 1,
                                index + 1, Badge(f), EscapeHtml(FindingSentence(f, d.workers)));
  out += NumbersTable(f);
  out += fmt::format("<p class=\"evidence\">{}</p>\n", EscapeHtml(f.evidence));
  if (f.category == FindingCategory::kHang) return out + "</section>\n";
  StripPlot beta = BetaDistribution(f, workers);
  std::string shape = beta.points.size() > beta.max_dots
                          ? fmt::format("Histogram of all {} workers", beta.points.size())
                          : fmt::format("Each dot is a worker ({} in all)", beta.points.size());
  out += Figure(RenderStripSvg(beta),
                fmt::format("{}; {}. Dashed: {}.", shape,
                            f.scope == FindingScope::kLocal ? "the suspects are the red dots" : "all are affected",
                            EscapeHtml(beta.reference_label)));
  if (std::optional<StripPlot> mu = UtilisationDistribution(f, workers)) {
    out += Figure(RenderStripSvg(*mu), "Utilisation of the function's resource (from hardware samples).");
  }
  LineChart persistence = PersistenceChart(f, workers);
  out += Figure(RenderLineChartSvg(persistence, 680, 210),
                "Per profiled iteration: a real fault persists in every iteration, noise moves between ranks.");
  return out + "</section>\n";
}

std::string HeatmapSection(const Diagnosis& d, const std::vector<WorkerPattern>& workers) {
  Heatmap map = BuildHeatmap(workers, d);
  std::string svg = RenderHeatmapSvg(map);
  if (svg.empty()) return "";
  std::string out = "<section id=\"heatmap\"><h2>Where each worker's time goes, against its peers</h2>\n";
  out +=
      "<p class=\"meta\">Each cell: the worker's β for the function (share of the profiled window it owns the "
      "critical path) minus the median of its peers, in percentage points. Red: more than the peers; blue: less; "
      "colours are scaled per column. In communication columns a straggler shows as blue (it waits least) and its "
      "peers as red (they wait for it). Hover a cell for its numbers.";
  if (map.banded) {
    out += fmt::format(
        " {} workers: suspects keep their own rows; the others are folded into bands of neighbouring "
        "ranks, each cell showing the band's most extreme worker.",
        map.workers);
  }
  return out + "</p>\n<div class=\"scroll\">" + svg + "</div></section>\n";
}

std::string SessionSection(const SessionInfo& s) {
  LineChart chart = IterationTimeChart(s);
  std::string svg = RenderLineChartSvg(chart, 900, 240);
  if (svg.empty()) return "";
  std::string caption = s.reason == "hang" ? "As the online watchdog saw them on the detecting rank, up to the "
                                             "iteration that never finished."
                                           : "As the online detector saw them on the detecting rank; the shaded "
                                             "range is the window every rank profiled.";
  return "<section id=\"series\"><h2>Iteration times around the trigger</h2>\n<div class=\"scroll\">" + svg +
         "</div><p class=\"meta\">" + caption + "</p></section>\n";
}

std::string QualitySection(const Diagnosis& d, const SessionInfo& s) {
  std::string out = "<section id=\"warnings\"><h2>Data quality</h2>\n";
  std::vector<std::string> warnings = d.warnings;
  warnings.insert(warnings.end(), s.warnings.begin(), s.warnings.end());
  if (warnings.empty()) {
    out += "<p class=\"ok\">No warnings: every input was read completely.</p>\n";
  } else {
    out += "<ul class=\"warnings\">\n";
    for (const std::string& w : warnings) out += fmt::format("<li>{}</li>\n", EscapeHtml(w));
    out += "</ul>\n";
  }
  for (const std::string& note : d.notes) out += fmt::format("<p class=\"meta\">Note: {}</p>\n", EscapeHtml(note));
  return out + "</section>\n";
}

}  // namespace

std::string RenderHtmlReport(const Diagnosis& d, const std::vector<WorkerPattern>& workers, const SessionInfo& session,
                             const HtmlReportContext& context) {
  std::string title = d.healthy() ? "healthy" : FindingSentence(d.findings.front(), d.workers);
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out +=
      fmt::format("<title>eroica: {}</title>\n<style>{}</style></head>\n<body><main>\n", EscapeHtml(title), kReportCss);
  out += Header(d, workers, session, context);
  out += Verdict(d);
  for (size_t i = 0; i < d.findings.size(); ++i) out += FindingSection(d.findings[i], i, d, workers);
  out += HeatmapSection(d, workers);
  out += BaselineSectionHtml(context.baseline);
  out += SessionSection(session);
  out += QualitySection(d, session);
  out += "<footer>eroica — differential observability for distributed training";
  if (!context.generated_at.empty()) out += " · generated " + EscapeHtml(context.generated_at);
  return out + "</footer>\n</main></body></html>\n";
}

}  // namespace eroica
