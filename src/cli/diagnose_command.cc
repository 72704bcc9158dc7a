// eroica diagnose PATH...: traces and/or pattern files of all ranks (or a session folder) in,
// findings out.
#include <filesystem>
#include <thread>

#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/diagnose_inputs.h"
#include "localize/localizer.h"
#include "report/diagnosis_json.h"
#include "report/text_report.h"

namespace eroica {
namespace {

struct DiagnoseOptions {
  std::vector<std::string> paths;
  std::string format = "text";
  std::string expect;
  int threads = 0;
};

int RunDiagnose(const DiagnoseOptions& options) {
  Expectations expectations = DefaultExpectations();
  if (!options.expect.empty()) {
    StatusOr<Expectations> loaded = LoadExpectations(options.expect);
    if (!loaded.ok()) {
      fmt::print(stderr, "eroica: {}\n", loaded.status().message());
      return 2;
    }
    expectations = *loaded;
  }
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  StatusOr<LocalizeInput> input = CollectDiagnoseInputs(options.paths, threads);
  if (!input.ok()) {
    fmt::print(stderr, "eroica: {}\n", input.status().message());
    return 1;
  }
  Diagnosis diagnosis = Localize(*input, expectations);
  if (options.format == "json") {
    fmt::print("{}\n", DiagnosisToJson(diagnosis).dump(2));
  } else {
    fmt::print("{}", FormatTextReport(diagnosis));
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
  cmd->add_option("--expect", options->expect, "Expected boxes (default: built in; the same as /usr/share/eroica/expectations.json)");
  cmd->add_option("-j,--threads", options->threads, "Parallel trace readers (default: all cores)");
  cmd->callback([options, exit_code] { *exit_code = RunDiagnose(*options); });
}

}  // namespace eroica
