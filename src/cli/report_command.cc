// eroica report PATH... -o report.html: the diagnosis as one self-contained HTML page.
#include <fmt/core.h>

#include <chrono>
#include <ctime>
#include <optional>

#include "base/file_util.h"
#include "cli/commands.h"
#include "cli/diagnosis_run.h"
#include "report/html_report.h"
#include "report/session_info.h"
#include "report/text_report.h"

namespace eroica {
namespace {

struct ReportOptions {
  std::vector<std::string> paths;
  std::string output;
  std::string expect;
  std::string baseline;
  int threads = 0;
};

std::string UtcNow() {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M UTC", &utc);
  return text;
}

int RunReport(const ReportOptions& options) {
  StatusOr<DiagnosedRun> run = DiagnosePaths(options.paths, options.expect, options.threads);
  if (!run.ok()) {
    fmt::print(stderr, "eroica: {}\n", run.status().message());
    return 1;
  }
  SessionInfo session = ReadSessionInfo(options.paths);
  std::optional<PatternDiff> baseline;
  if (!options.baseline.empty()) {
    StatusOr<PatternDiff> diff =
        ApplyBaselineFrom(options.baseline, options.threads, &*run, DetectedSlowdownMs(session));
    if (diff.ok()) {
      baseline = std::move(*diff);
    } else {
      run->diagnosis.warnings.push_back(diff.status().message());
    }
  }
  std::string source;
  for (const std::string& p : options.paths) source += (source.empty() ? "" : " ") + p;
  std::string html = RenderHtmlReport(run->diagnosis, run->input.workers, session,
                                      {source, UtcNow(), baseline ? &*baseline : nullptr});
  if (Status written = WriteFileAtomically(options.output, html); !written.ok()) {
    fmt::print(stderr, "eroica: {}\n", written.message());
    return 1;
  }
  fmt::print("{}: {}\n", options.output, OneLineVerdict(run->diagnosis));
  return 0;
}

}  // namespace

void RegisterReportCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand("report", "Write the diagnosis as one self-contained HTML page");
  cmd->add_option("paths", options->paths, "Folders or files, as for diagnose (traces, patterns, session folders)")
      ->required();
  cmd->add_option("-o,--output", options->output, "The HTML file to write")->required();
  cmd->add_option("--expect", options->expect,
                  "Expected boxes (default: built in; the same as /usr/share/eroica/expectations.json)");
  cmd->add_option("--baseline", options->baseline,
                  "The job's baseline (session, trace folder or pattern bundle): diagnose and show what changed since");
  cmd->add_option("-j,--threads", options->threads, "Parallel trace readers (default: all cores)");
  cmd->callback([options, exit_code] { *exit_code = RunReport(*options); });
}

}  // namespace eroica
