// eroica diagnose PATH...: traces and/or pattern files of all ranks (or a session folder) in,
// findings out.
#include <fmt/core.h>

#include "base/file_util.h"
#include "cli/commands.h"
#include "cli/diagnosis_run.h"
#include "report/diagnosis_json.h"
#include "report/session_info.h"
#include "report/text_report.h"

namespace eroica {
namespace {

struct DiagnoseOptions {
  std::vector<std::string> paths;
  std::string format = "text";
  std::string expect;
  std::string baseline;
  std::string json_out;
  int threads = 0;
};

int RunDiagnose(const DiagnoseOptions& options) {
  StatusOr<Expectations> expectations = ExpectationsFrom(options.expect);
  if (!expectations.ok()) {
    fmt::print(stderr, "eroica: {}\n", expectations.status().message());
    return 2;
  }
  const bool against_baseline = !options.baseline.empty();
  StatusOr<DiagnosedRun> run = DiagnosePaths(options.paths, *expectations, options.threads, against_baseline);
  if (!run.ok()) {
    fmt::print(stderr, "eroica: {}\n", run.status().message());
    return 1;
  }
  // What the detector saw that the window's readings do not show (python/eroica/detector.py).
  const SessionInfo session = ReadSessionInfo(options.paths, /*with_ranks=*/false);
  if (std::string note = FreshMemoryNote(session); !note.empty()) run->diagnosis.notes.push_back(std::move(note));
  if (against_baseline) {
    // A baseline that cannot be read leaves the diagnosis by peers and boxes, said in a warning.
    StatusOr<PatternDiff> diff =
        ApplyBaselineFrom(options.baseline, options.threads, &*run, DetectedSlowdownMs(session));
    if (!diff.ok()) run->diagnosis.warnings.push_back(diff.status().message());
  }
  if (!options.json_out.empty()) {
    // The online path wants both documents from one diagnosis (it may take minutes at scale).
    Status written = WriteFileAtomically(options.json_out, DiagnosisToJson(run->diagnosis).dump(2) + "\n");
    if (!written.ok()) {
      fmt::print(stderr, "eroica: {}\n", written.message());
      return 1;
    }
  }
  if (options.format == "json") {
    fmt::print("{}\n", DiagnosisToJson(run->diagnosis).dump(2));
  } else {
    fmt::print("{}", FormatTextReport(run->diagnosis));
  }
  return 0;
}

}  // namespace

void RegisterDiagnoseCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<DiagnoseOptions>();
  CLI::App* cmd = app.add_subcommand("diagnose", "Find which worker and function slow the job down");
  cmd->add_option("paths", options->paths,
                  "Folders or files: per-rank traces (.json, .json.gz), pattern files, session folders")
      ->required();
  cmd->add_option("--format", options->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--expect", options->expect,
                  "Expected boxes (default: built in; the same as /usr/share/eroica/expectations.json)");
  cmd->add_option("--baseline", options->baseline,
                  "The job's baseline (session, trace folder or pattern bundle): also say what changed since");
  cmd->add_option("--json-out", options->json_out,
                  "Also write the eroica.diagnosis/v1 JSON to this file (one diagnosis, both documents)");
  cmd->add_option("-j,--threads", options->threads, "Parallel trace readers (default: all cores)");
  cmd->callback([options, exit_code] { *exit_code = RunDiagnose(*options); });
}

}  // namespace eroica
