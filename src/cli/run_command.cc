// eroica run [--dir DIR] -- COMMAND...: runs a training command with eroica's hooks in every
// Python process it starts (no code change). The work is done by the Python package
// (`python -m eroica run`; run_package.h says where it is found); this puts it on PYTHONPATH,
// points it at this binary for the diagnosis, and replaces itself with it.
#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "cli/commands.h"
#include "cli/run_package.h"

namespace eroica {
namespace {

struct RunOptions {
  std::string dir;
  std::string python = EROICA_PYTHON;
  std::vector<std::string> command;
};

int RunRun(const RunOptions& options) {
  StatusOr<std::string> found = FindPythonPackage(ThisProcessPackageSearch());
  if (!found.ok()) {
    fmt::print(stderr, "eroica: {}\n", found.status().message());
    return 2;
  }
  const std::string& package = *found;
  std::error_code error;
  std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
  std::string path = package;
  // The stack sampler's frame walker where this binary was built (python/native/CMakeLists.txt);
  // installed, it lies beside the package.
  std::error_code native_error;
  std::filesystem::path native = std::filesystem::path(self).parent_path() / "python-native";
  if (!error && std::filesystem::is_directory(native, native_error)) path += ":" + native.string();
  const char* old_path = std::getenv("PYTHONPATH");
  if (old_path && *old_path) path += std::string(":") + old_path;
  setenv("PYTHONPATH", path.c_str(), 1);
  if (!error && std::getenv("EROICA_BIN") == nullptr) setenv("EROICA_BIN", self.c_str(), 1);
  std::vector<std::string> args = {options.python, "-m", "eroica", "run"};
  if (!options.dir.empty()) args.insert(args.end(), {"--dir", options.dir});
  args.push_back("--");
  args.insert(args.end(), options.command.begin(), options.command.end());
  std::vector<char*> argv;
  argv.reserve(args.size() + 1);
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  execv(options.python.c_str(), argv.data());
  fmt::print(stderr, "eroica: cannot run {}: {}\n", options.python, std::strerror(errno));
  return 2;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run a training command with eroica watching it: eroica run -- torchrun ... train.py");
  cmd->add_option("--dir", options->dir, "Where sessions go (default: $EROICA_DIR or /tmp/eroica)");
  cmd->add_option("--python", options->python, "The interpreter that runs the package");
  cmd->add_option("command", options->command, "The training command, after --")->required();
  cmd->callback([options, exit_code] { *exit_code = RunRun(*options); });
}

}  // namespace eroica
