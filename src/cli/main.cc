// The eroica command line: one table of subcommands; each lives in its own *_command.cc.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "base/heap_reuse.h"
#include "cli/commands.h"
#include "cli/version_text.h"

namespace {

int Run(int argc, char** argv) {
  CLI::App app{"eroica: find why a distributed training job got slow"};
  app.require_subcommand(1);
  app.set_version_flag("--version", eroica::VersionText(),
                       "Print the version and the file formats it reads and writes");
  int exit_code = 0;
  for (const eroica::CommandRegistrar& registrar : eroica::AllCommands()) {
    registrar(app, &exit_code);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error);
  }
  return exit_code;
}

}  // namespace

// Every command reports input errors as values; what still escapes is a bug, and it gets one
// line and exit 3 rather than an abort's core dump.
int main(int argc, char** argv) {
  eroica::KeepFreedMemoryForReuse();
  try {
    return Run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "eroica: internal error: %s\n", error.what());
  } catch (...) {
    std::fprintf(stderr, "eroica: internal error\n");
  }
  return 3;
}
