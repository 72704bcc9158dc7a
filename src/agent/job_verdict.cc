#include "agent/job_verdict.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "agent/prometheus_text.h"
#include "base/file_util.h"
#include "base/rank_ranges.h"
#include "localize/finding_kind.h"
#include "report/diagnosis_json_reader.h"
#include "report/session_info.h"

namespace eroica::agent {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFindingMetric = "eroica_finding";
// The verdict's gauges labelled by job alone, in page order.
constexpr const char* kVerdictGauges[] = {"eroica_verdict_findings", "eroica_verdict_timestamp_seconds",
                                          "eroica_detector_current_iteration_seconds",
                                          "eroica_detector_baseline_iteration_seconds"};

// A folder of sessions is bounded by the Python side's retention; this caps a scan regardless.
constexpr size_t kMaxSessionsScanned = 10000;

// The mtime of PATH when it is a regular file (not a symlink), else -1.
int64_t RegularFileMtimeNs(const std::string& path) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return -1;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1'000'000'000 + info.st_mtim.tv_nsec;
}

std::string RanksOf(std::vector<int> workers) {
  std::sort(workers.begin(), workers.end());
  return CutLabel(RankRanges(workers), kMaxRankBytes);
}

}  // namespace

std::string CutLabel(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kEllipsis = "\u2026";
  size_t end = max_bytes - kEllipsis.size();
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;  // not inside a character
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

StatusOr<JobVerdict> ReadJobVerdict(const std::string& session_dir) {
  std::string report_path = session_dir + "/report.json";
  StatusOr<Diagnosis> diagnosis = ReadDiagnosisFile(report_path);
  if (!diagnosis.ok()) return diagnosis.status();
  JobVerdict verdict;
  verdict.session = fs::path(session_dir).filename().string();
  // Milliseconds: the page shows 1700000000.25, not the nanoseconds' rounding noise.
  int64_t report_ms = std::max<int64_t>(RegularFileMtimeNs(report_path), 0) / 1'000'000;
  verdict.report_unix_s = static_cast<double>(report_ms) / 1e3;
  verdict.findings_total = diagnosis->findings.size();
  for (const Finding& finding : diagnosis->findings) {
    if (verdict.findings.size() == kMaxExportedFindings) break;
    verdict.findings.push_back({std::string(Name(finding.category)), std::string(Name(finding.scope)),
                                RanksOf(finding.workers), CutLabel(finding.function, kMaxFunctionBytes),
                                finding.impact_s_per_iter});
  }
  // session.json is optional (a folder diagnosed by hand has none): its absence leaves zeros.
  StatusOr<std::string> session = ReadSmallFile(session_dir + "/session.json", 16 << 20);
  if (session.ok()) {
    SessionInfo info;
    ParseSessionJson(*session, &info);
    verdict.job = info.job_id;
    verdict.current_iteration_s = info.current_mean_s;
    verdict.baseline_iteration_s = info.best_mean_s;
  }
  return verdict;
}

std::string NewestReportedSession(const std::string& sessions_dir) {
  std::error_code error;
  fs::directory_iterator it(sessions_dir, error);
  std::string newest;
  int64_t newest_mtime_ns = -1;
  size_t scanned = 0;
  for (; !error && it != fs::directory_iterator() && scanned < kMaxSessionsScanned; it.increment(error), ++scanned) {
    if (!it->is_directory(error) || it->is_symlink(error)) continue;  // session folders that are symlinks: skipped
    std::string dir = it->path().string();
    int64_t mtime_ns = RegularFileMtimeNs(dir + "/report.json");
    if (mtime_ns > newest_mtime_ns || (mtime_ns == newest_mtime_ns && mtime_ns >= 0 && dir > newest)) {
      newest = dir;
      newest_mtime_ns = mtime_ns;
    }
  }
  return newest_mtime_ns >= 0 ? newest : "";
}

Status VerdictWatcher::Poll() {
  std::string newest = NewestReportedSession(sessions_dir_);
  if (newest.empty()) return Status::Ok();
  int64_t mtime_ns = RegularFileMtimeNs(newest + "/report.json");
  if (newest == seen_path_ && mtime_ns == seen_mtime_ns_) return Status::Ok();
  seen_path_ = newest;
  seen_mtime_ns_ = mtime_ns;
  StatusOr<JobVerdict> verdict = ReadJobVerdict(newest);
  if (!verdict.ok()) return verdict.status();
  std::lock_guard<std::mutex> lock(mu_);
  latest_ = std::move(*verdict);
  return Status::Ok();
}

std::optional<JobVerdict> VerdictWatcher::Latest() {
  std::lock_guard<std::mutex> lock(mu_);
  return latest_;
}

void RenderVerdictMetrics(const std::optional<JobVerdict>& verdict, std::string* out) {
  auto to = std::back_inserter(*out);
  fmt::format_to(to,
                 "# HELP {0} Seconds per iteration a finding of the job's latest diagnosis costs (at most {1} "
                 "findings, most costly first).\n# TYPE {0} gauge\n",
                 kFindingMetric, kMaxExportedFindings);
  std::string job = verdict ? EscapeLabelValue(verdict->job) : "";
  if (verdict) {
    for (const VerdictFinding& f : verdict->findings) {
      fmt::format_to(to, "{}{{job=\"{}\",category=\"{}\",scope=\"{}\",rank=\"{}\",function=\"{}\"}} {}\n",
                     kFindingMetric, job, f.category, f.scope, EscapeLabelValue(f.ranks), EscapeLabelValue(f.function),
                     f.seconds_per_iteration);
    }
  }
  struct Row {
    const char* name;
    const char* help;
    double value;
    bool known;
  };
  const Row rows[] = {
      {kVerdictGauges[0], "Findings in the job's latest diagnosis (0: healthy), before the export cap.",
       verdict ? static_cast<double>(verdict->findings_total) : 0, verdict.has_value()},
      {kVerdictGauges[1], "When the latest diagnosis was written (unix time).", verdict ? verdict->report_unix_s : 0,
       verdict.has_value()},
      {kVerdictGauges[2], "The detector's mean iteration time when it fired.",
       verdict ? verdict->current_iteration_s : 0, verdict && verdict->current_iteration_s > 0},
      {kVerdictGauges[3], "The best mean iteration time the detector compared with.",
       verdict ? verdict->baseline_iteration_s : 0, verdict && verdict->baseline_iteration_s > 0},
  };
  for (const Row& row : rows) {
    fmt::format_to(to, "# HELP {0} {1}\n# TYPE {0} gauge\n", row.name, row.help);
    if (row.known) fmt::format_to(to, "{}{{job=\"{}\"}} {}\n", row.name, job, row.value);
  }
}

std::vector<std::string> VerdictMetricNames() {
  std::vector<std::string> names = {kFindingMetric};
  for (const char* name : kVerdictGauges) names.emplace_back(name);
  return names;
}

}  // namespace eroica::agent
