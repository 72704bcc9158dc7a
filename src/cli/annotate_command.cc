// eroica annotate TRACE -o OUT.json: the trace with eroica's findings added as a track, for
// Perfetto UI or chrome://tracing.
#include <fmt/core.h>

#include <filesystem>

#include "cli/commands.h"
#include "cli/diagnosis_run.h"
#include "report/annotate.h"
#include "report/annotation_plan.h"
#include "report/diagnosis_json_reader.h"

namespace eroica {
namespace {

struct AnnotateOptions {
  std::string trace;
  std::string output;
  std::string diagnosis;  // a saved `diagnose --format json`
  std::string from;       // a folder to diagnose; default: the trace's own folder
  std::string expect;
  int threads = 0;
};

StatusOr<Diagnosis> ObtainDiagnosis(const AnnotateOptions& options) {
  if (!options.diagnosis.empty()) return ReadDiagnosisFile(options.diagnosis);
  std::string from = options.from;
  if (from.empty()) {
    from = std::filesystem::path(options.trace).parent_path().string();
    if (from.empty()) from = ".";
  }
  StatusOr<DiagnosedRun> run = DiagnosePaths({from}, options.expect, options.threads);
  if (!run.ok()) return run.status();
  return std::move(run->diagnosis);
}

int RunAnnotate(const AnnotateOptions& options) {
  std::error_code error;
  if (std::filesystem::exists(options.output, error) &&
      std::filesystem::equivalent(options.output, options.trace, error)) {
    fmt::print(stderr, "eroica: the output would overwrite the trace it reads\n");
    return 2;
  }
  StatusOr<Diagnosis> diagnosis = ObtainDiagnosis(options);
  if (!diagnosis.ok()) {
    fmt::print(stderr, "eroica: {}\n", diagnosis.status().message());
    return 1;
  }
  if (diagnosis->healthy()) fmt::print(stderr, "eroica: the diagnosis is healthy: nothing to mark\n");
  StatusOr<AnnotationPlan> plan = PlanAnnotationForTrace(options.trace, *diagnosis);
  if (!plan.ok()) {
    fmt::print(stderr, "eroica: {}\n", plan.status().message());
    return 1;
  }
  StatusOr<AnnotateResult> result = WriteAnnotatedTrace(options.trace, *plan, diagnosis->workers, options.output);
  if (!result.ok()) {
    fmt::print(stderr, "eroica: {}\n", result.status().message());
    return 1;
  }
  namespace fs = std::filesystem;
  fs::path out_dir = fs::absolute(options.output, error).parent_path();
  if (out_dir == fs::absolute(options.trace, error).parent_path() &&
      !fs::path(options.output).filename().string().starts_with("report.")) {
    fmt::print(stderr,
               "eroica: note: {} sits beside the traces; `eroica diagnose` of that folder will read it as "
               "another trace (name it report.*.json or write it elsewhere)\n",
               options.output);
  }
  size_t marks = 0;
  for (const FindingMarks& m : plan->findings) marks += m.marks.size();
  fmt::print("{}: rank {}, {} events copied, {} added ({} marks for {} finding{}){}\n", options.output, plan->rank,
             result->events_copied, result->events_added, marks, plan->findings.size(),
             plan->findings.size() == 1 ? "" : "s", result->input_truncated ? "; the input trace is truncated" : "");
  return 0;
}

}  // namespace

void RegisterAnnotateCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<AnnotateOptions>();
  CLI::App* cmd =
      app.add_subcommand("annotate", "Write a trace with the findings marked, for Perfetto or chrome://tracing");
  cmd->add_option("trace", options->trace, "One rank's trace (.json or .json.gz)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", options->output, "The annotated trace to write (.json, or .json.gz)")->required();
  auto* diagnosis = cmd->add_option("--diagnosis", options->diagnosis, "A saved `eroica diagnose --format json`");
  cmd->add_option("--from", options->from, "Diagnose this folder (default: the trace's folder)")->excludes(diagnosis);
  cmd->add_option("--expect", options->expect, "Expected boxes, when diagnosing");
  cmd->add_option("-j,--threads", options->threads, "Parallel trace readers, when diagnosing");
  cmd->callback([options, exit_code] { *exit_code = RunAnnotate(*options); });
}

}  // namespace eroica
