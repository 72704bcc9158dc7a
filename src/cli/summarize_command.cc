// eroica summarize TRACE... -o PATTERN: traces to a pattern file (a bundle when several).
#include <fmt/core.h>

#include <filesystem>
#include <map>
#include <thread>

#include "cli/commands.h"
#include "cli/hardware_samples.h"
#include "summary/pattern_file.h"
#include "summary/summarize_files.h"

namespace eroica {
namespace {

struct SummarizeCommandOptions {
  std::vector<std::string> traces;
  std::string output;
  std::string metrics;
  int threads = 0;
  size_t max_memory_mb = 0;
};

int RunSummarize(const SummarizeCommandOptions& options) {
  int threads = options.threads > 0 ? options.threads : static_cast<int>(std::thread::hardware_concurrency());
  std::vector<std::string> errors;
  std::map<std::string, HardwareSamples> samples;  // by folder, or the one --metrics file
  for (const std::string& trace : options.traces) {
    std::string key = options.metrics.empty() ? std::filesystem::path(trace).parent_path().string() : "";
    if (samples.contains(key)) continue;
    samples.emplace(key, options.metrics.empty() ? HardwareSamples::FromFolder(key, &errors)
                                                 : HardwareSamples::FromFile(options.metrics, &errors));
  }
  for (const std::string& error : errors) fmt::print(stderr, "eroica: {}\n", error);
  if (!options.metrics.empty() && samples.at("").empty()) return 1;
  SamplesProvider provider = [&](const Trace& trace, std::string* note) {
    std::string key = options.metrics.empty() ? std::filesystem::path(trace.meta.path).parent_path().string() : "";
    return samples.at(key).ForTrace(trace, note);
  };
  FileSummaries result = SummarizeFiles(options.traces, threads, {}, provider, options.max_memory_mb << 20);
  for (const std::string& note : result.notes) fmt::print(stderr, "eroica: warning: {}\n", note);
  for (const std::string& error : result.errors) fmt::print(stderr, "eroica: {}\n", error);
  if (result.patterns.empty()) return 1;
  for (const WorkerPattern& p : result.patterns) {
    for (const std::string& warning : p.warnings) fmt::print(stderr, "eroica: warning: rank {}: {}\n", p.rank, warning);
  }
  Status status = WritePatternFile(options.output, result.patterns);
  if (!status.ok()) {
    fmt::print(stderr, "eroica: {}\n", status.message());
    return 1;
  }
  return result.errors.empty() ? 0 : 2;
}

}  // namespace

void RegisterSummarizeCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<SummarizeCommandOptions>();
  CLI::App* cmd =
      app.add_subcommand("summarize", "Reduce trace(s) to a behaviour pattern file (several traces: one bundle)");
  cmd->add_option("traces", options->traces, "PyTorch profiler traces (.json, .json.gz)")->required();
  cmd->add_option("-o,--output", options->output, "The pattern file to write")->required();
  cmd->add_option("--metrics", options->metrics, "Hardware samples from `eroica agent` (for μ, σ)");
  cmd->add_option("-j,--threads", options->threads,
                  "Threads in all: parallel readers, and a gzip's inflate beside its reader when one is left over "
                  "(default: all cores)");
  cmd->add_option("--max-memory", options->max_memory_mb,
                  "MB the readers may hold together (default: no limit); fewer readers run when it is small, and a "
                  "trace too large for its share is an error");
  cmd->callback([options, exit_code] { *exit_code = RunSummarize(*options); });
}

}  // namespace eroica
