// eroica prompt PATH...: the diagnosis as a Markdown prompt for an AI coding assistant.
#include <fmt/core.h>

#include <filesystem>

#include "base/file_util.h"
#include "cli/commands.h"
#include "cli/diagnosis_run.h"
#include "report/prompt.h"
#include "report/session_info.h"

namespace eroica {
namespace {

struct PromptCommandOptions {
  std::vector<std::string> paths;
  std::vector<std::string> source_roots;
  std::string output;
  std::string expect;
  int context_lines = 5;
  int threads = 0;
};

// Relative source paths are looked up under --source-root, then the current folder, then the
// folders diagnosed (a session folder often sits beside the job's code).
std::vector<std::string> SourceRoots(const PromptCommandOptions& options) {
  std::vector<std::string> roots = options.source_roots;
  roots.push_back(".");
  for (const std::string& p : options.paths) {
    std::error_code error;
    roots.push_back(std::filesystem::is_directory(p, error) ? p : std::filesystem::path(p).parent_path().string());
  }
  return roots;
}

int RunPrompt(const PromptCommandOptions& options) {
  StatusOr<DiagnosedRun> run = DiagnosePaths(options.paths, options.expect, options.threads);
  if (!run.ok()) {
    fmt::print(stderr, "eroica: {}\n", run.status().message());
    return 1;
  }
  SessionInfo session = ReadSessionInfo(options.paths);
  PromptOptions prompt_options;
  prompt_options.source_roots = SourceRoots(options);
  prompt_options.context_lines = options.context_lines;
  std::string prompt = RenderPrompt(run->diagnosis, run->input, session, prompt_options);
  if (options.output.empty()) {
    fmt::print("{}", prompt);
    return 0;
  }
  if (Status written = WriteFileAtomically(options.output, prompt); !written.ok()) {
    fmt::print(stderr, "eroica: {}\n", written.message());
    return 1;
  }
  return 0;
}

}  // namespace

void RegisterPromptCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<PromptCommandOptions>();
  CLI::App* cmd = app.add_subcommand("prompt", "Print the diagnosis as a Markdown prompt for an AI coding assistant");
  cmd->add_option("paths", options->paths, "Folders or files, as for diagnose (traces, patterns, session folders)")
      ->required();
  cmd->add_option("--source-root", options->source_roots, "Where to look up relative source paths (repeatable)");
  cmd->add_option("--context", options->context_lines, "Source lines shown on each side of a location")
      ->check(CLI::Range(0, 50));
  cmd->add_option("-o,--output", options->output, "Write to this file instead of stdout");
  cmd->add_option("--expect", options->expect,
                  "Expected boxes (default: built in; the same as /usr/share/eroica/expectations.json)");
  cmd->add_option("-j,--threads", options->threads, "Parallel trace readers (default: all cores)");
  cmd->callback([options, exit_code] { *exit_code = RunPrompt(*options); });
}

}  // namespace eroica
