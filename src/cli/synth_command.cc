// eroica synth: a pattern bundle of N synthetic workers drawn from real patterns, with known
// faults planted and the truth written beside it (for measuring diagnose at scale).
#include <fmt/core.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "summary/pattern_file.h"
#include "synth/synthesizer.h"

namespace eroica {
namespace {

struct SynthCommandOptions {
  std::vector<std::string> templates;
  std::string output;
  std::string truth;
  std::string straggler_category = "dataloader";
  SynthOptions synth;
};

int RunSynth(SynthCommandOptions options) {
  std::vector<WorkerPattern> templates;
  for (const std::string& path : options.templates) {
    Status status = ForEachPattern(path, [&](WorkerPattern&& w) { templates.push_back(std::move(w)); });
    if (!status.ok()) {
      fmt::print(stderr, "eroica: {}\n", status.message());
      return 1;
    }
  }
  std::optional<Category> category = CategoryFromName(options.straggler_category);
  if (!category) {
    fmt::print(stderr, "eroica: unknown category '{}'\n", options.straggler_category);
    return 2;
  }
  options.synth.straggler_category = *category;
  if (options.truth.empty()) options.truth = options.output + ".truth.json";
  StatusOr<SynthResult> result = Synthesize(templates, options.synth, options.output, options.truth);
  if (!result.ok()) {
    fmt::print(stderr, "eroica: {}\n", result.status().message());
    return 1;
  }
  fmt::print("{}: {} workers, {} bytes ({:.0f} per worker); truth in {}\n", options.output, result->workers,
             result->bytes, static_cast<double>(result->bytes) / static_cast<double>(result->workers), options.truth);
  for (const PlantedFault& p : result->planted) {
    fmt::print("  planted {} {} in {} (+{:.0f}% of the iteration){}\n", p.global ? "global" : "local",
               CategoryName(p.category), p.function, p.excess_share * 100,
               p.ranks.empty() ? std::string() : fmt::format(" on ranks {}", fmt::join(p.ranks, ", ")));
  }
  return 0;
}

}  // namespace

void RegisterSynthCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<SynthCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a pattern bundle of N synthetic workers drawn from real patterns, with planted faults");
  cmd->add_option("templates", options->templates,
                  "Pattern files of a real job (`eroica summarize`): the healthy worker and its noise")
      ->required();
  cmd->add_option("-o,--output", options->output, "The bundle to write")->required();
  cmd->add_option("-n,--workers", options->synth.workers, "How many workers (1 ... 1,000,000+)");
  cmd->add_option("--seed", options->synth.seed, "Random seed (same seed, same bundle)");
  cmd->add_option("--stragglers", options->synth.stragglers, "Local faults: how many straggling workers");
  cmd->add_option("--straggler-category", options->straggler_category,
                  "Their excess: dataloader, compute, memory or host");
  cmd->add_option("--straggler-excess", options->synth.straggler_excess,
                  "Their extra time, as a share of the healthy iteration");
  cmd->add_option("--global", options->synth.global_kind, "Also plant a global fault: python or dataloader");
  cmd->add_option("--global-excess", options->synth.global_excess, "Its time, as a share of the healthy iteration");
  cmd->add_option("--truth", options->truth, "Where the planted truth goes (default: OUTPUT.truth.json)");
  // 1 with `summarize`'s level (9): magic + each block is exactly the pattern file that rank's
  // own `eroica summarize` would write, what it sends in the scale-out path (bench/scale_bench.py).
  cmd->add_option("--workers-per-block", options->synth.workers_per_block,
                  "Workers per self-contained block (default 4096; 1: one rank's own pattern per block)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--zstd-level", options->synth.zstd_level, "zstd level of each block (summarize writes 9)")
      ->check(CLI::Range(1, 19));
  cmd->callback([options, exit_code] { *exit_code = RunSynth(*options); });
}

}  // namespace eroica
