// Subcommand registration. Each Register*Command adds its subcommand, parses its flags into an
// options struct, and on run stores the exit code in *exit_code.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace eroica {

using CommandRegistrar = void (*)(CLI::App& app, int* exit_code);

void RegisterSummarizeCommand(CLI::App& app, int* exit_code);
void RegisterShowCommand(CLI::App& app, int* exit_code);
void RegisterDiagnoseCommand(CLI::App& app, int* exit_code);
void RegisterDiffCommand(CLI::App& app, int* exit_code);
void RegisterRunCommand(CLI::App& app, int* exit_code);
void RegisterAgentCommand(CLI::App& app, int* exit_code);
void RegisterReportCommand(CLI::App& app, int* exit_code);
void RegisterPromptCommand(CLI::App& app, int* exit_code);
void RegisterAnnotateCommand(CLI::App& app, int* exit_code);
void RegisterSynthCommand(CLI::App& app, int* exit_code);

// The table of subcommands, in the order `eroica --help` lists them.
inline std::vector<CommandRegistrar> AllCommands() {
  return {
      RegisterRunCommand,    RegisterDiagnoseCommand, RegisterDiffCommand,      RegisterReportCommand,
      RegisterPromptCommand, RegisterAnnotateCommand, RegisterSummarizeCommand, RegisterShowCommand,
      RegisterSynthCommand,  RegisterAgentCommand,
  };
}

}  // namespace eroica
