// eroica diff BASE NOW: what changed between two runs (sessions, trace folders or pattern files).
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/diagnosis_run.h"
#include "diff/diff_report.h"

namespace eroica {
namespace {

struct DiffCommandOptions {
  std::string base;
  std::string now;
  std::string format = "text";
  int threads = 0;
};

int RunDiff(const DiffCommandOptions& options) {
  StatusOr<LocalizeInput> base = CollectDiagnoseInputs({options.base}, ReaderThreads(options.threads), true);
  if (!base.ok()) {
    fmt::print(stderr, "eroica: base: {}\n", base.status().message());
    return 1;
  }
  StatusOr<LocalizeInput> now = CollectDiagnoseInputs({options.now}, ReaderThreads(options.threads), true);
  if (!now.ok()) {
    fmt::print(stderr, "eroica: now: {}\n", now.status().message());
    return 1;
  }
  for (const std::string& error : base->input_errors) fmt::print(stderr, "eroica: base: {}\n", error);
  for (const std::string& error : now->input_errors) fmt::print(stderr, "eroica: now: {}\n", error);
  PatternDiff diff = DiffPatterns(base->workers, now->workers);
  if (options.format == "json") {
    fmt::print("{}\n", DiffToJson(diff).dump(2));
  } else {
    fmt::print("{}", FormatDiffText(diff));
  }
  return 0;
}

}  // namespace

void RegisterDiffCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<DiffCommandOptions>();
  CLI::App* cmd = app.add_subcommand("diff", "What changed between two runs: per function and category, per rank");
  cmd->add_option("base", options->base, "The run to compare against: session folder, trace folder or pattern file")
      ->required();
  cmd->add_option("now", options->now, "The run to compare: session folder, trace folder or pattern file")->required();
  cmd->add_option("--format", options->format, "text or json (eroica.diff/v1)")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-j,--threads", options->threads, "Parallel trace readers (default: all cores)");
  cmd->callback([options, exit_code] { *exit_code = RunDiff(*options); });
}

}  // namespace eroica
