// eroica show FILE: a pattern file, or an agent's metrics file, for humans or as JSON.
#include <fmt/core.h>

#include "agent/metrics_json.h"
#include "cli/commands.h"
#include "summary/pattern_file.h"
#include "summary/pattern_json.h"

namespace eroica {
namespace {

struct ShowOptions {
  std::string path;
  std::string format = "text";
  size_t max_functions = 20;
};

void PrintText(const WorkerPattern& w, size_t max_functions) {
  fmt::print("rank {} of {}  {}  {} iterations (steps {}..{})  {:.3f} s/iteration  window {:.3f} s\n", w.rank,
             w.world_size, w.has_device ? (w.device_name.empty() ? "GPU" : w.device_name) : "CPU", w.iterations(),
             w.step_ids.empty() ? -1 : w.step_ids.front(), w.step_ids.empty() ? -1 : w.step_ids.back(), w.iteration_s,
             w.window_ns / 1e9);
  fmt::print("  by category:");
  for (int c = 0; c < kCategoryCount; ++c) {
    fmt::print(" {} {:.3f}", CategoryName(static_cast<Category>(c)), w.category_beta[c]);
  }
  fmt::print("\n  {:>7} {:>7} {:>7} {:>9} {:>11}  {:<13} {}\n", "beta", "mu", "sigma", "calls/it", "mean_us",
             "category", "function");
  size_t shown = 0;
  for (const FunctionPattern& f : w.functions) {
    if (shown++ >= max_functions) break;
    std::string category(CategoryName(f.category));
    if (f.host_kind != HostKind::kNone) category += "/" + std::string(HostKindName(f.host_kind));
    fmt::print("  {:7.4f} {:>7} {:>7} {:9.1f} {:11.1f}  {:<13} {}\n", f.beta, f.mu ? fmt::format("{:.3f}", *f.mu) : "-",
               f.sigma ? fmt::format("{:.3f}", *f.sigma) : "-", f.calls_per_iter, f.mean_duration_us, category, f.name);
    for (const HotFrame& frame : f.hot_frames) {
      fmt::print("  {:>57}  at {} ({:.0f}% of its sampled time)\n", "", frame.location, 100.0 * frame.share);
    }
  }
  if (w.cpu) {
    const CpuShare& c = *w.cpu;
    fmt::print("  cpu: node {:.0f}% busy ({:g} cores); process {:.2f} cores, queued {:.2f} s/s", 100.0 * c.host_busy,
               c.cpus, c.process_cpu, c.run_delay);
    if (c.main_cpu >= 0) fmt::print("; training thread {:.2f}, queued {:.2f}", c.main_cpu, c.main_run_delay);
    if (c.throttled >= 0) fmt::print("; quota throttled {:.2f} of the window", c.throttled);
    if (c.loader_cpu > 0 || c.loader_run_delay > 0) {
      fmt::print("; loader workers {:.2f} cores, queued {:.2f} s/s", c.loader_cpu, c.loader_run_delay);
      if (c.loader_making >= 0) {
        fmt::print(", making batches {:.2f} s/s, asleep making them {:.2f}", c.loader_making, c.loader_asleep);
      }
    }
    fmt::print("\n");
  }
  for (const std::string& warning : w.warnings) fmt::print("  warning: {}\n", warning);
}

void PrintMetricsText(const nlohmann::json& j) {
  fmt::print("metrics of {}  {} processes  {} series  window {:.3f} s\n", j["host"].get<std::string>(),
             j["processes"].size(), j["series"].size(),
             (j["window_end_unix_ns"].get<int64_t>() - j["window_start_unix_ns"].get<int64_t>()) / 1e9);
  fmt::print("  {:<22} {:>8} {:>8} {:>6} {:>8} {:>14} {:>14} {:>14}  {}\n", "series", "instance", "pid", "unit",
             "samples", "min", "mean", "max", "label");
  for (const nlohmann::json& s : j["series"]) {
    bool any = s["samples"].get<size_t>() > 0;
    fmt::print("  {:<22} {:>8} {:>8} {:>6} {:>8} {:>14} {:>14} {:>14}  {}\n", s["name"].get<std::string>(),
               s["instance"].get<std::string>(), s["pid"].get<int64_t>(), s["unit"].get<std::string>(),
               s["samples"].get<size_t>(), any ? fmt::format("{}", s["min"].get<int64_t>()) : "-",
               any ? fmt::format("{:.1f}", s["mean"].get<double>()) : "-",
               any ? fmt::format("{}", s["max"].get<int64_t>()) : "-", s["label"].get<std::string>());
  }
}

int RunShowMetrics(const ShowOptions& options) {
  StatusOr<agent::MetricsFile> file = agent::ReadMetricsFile(options.path);
  if (!file.ok()) {
    fmt::print(stderr, "eroica: {}\n", file.status().message());
    return 1;
  }
  nlohmann::json j = agent::MetricsFileToJson(*file);
  if (options.format == "json") {
    fmt::print("{}\n", j.dump(2));
  } else {
    PrintMetricsText(j);
  }
  return 0;
}

int RunShow(const ShowOptions& options) {
  if (options.path.ends_with(".eroica-metrics")) return RunShowMetrics(options);
  StatusOr<std::vector<WorkerPattern>> workers = ReadPatternFile(options.path);
  if (!workers.ok()) {
    fmt::print(stderr, "eroica: {}\n", workers.status().message());
    return 1;
  }
  if (options.format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const WorkerPattern& w : *workers) out.push_back(PatternToJson(w));
    fmt::print("{}\n", (workers->size() == 1 ? out[0] : out).dump(2));
    return 0;
  }
  for (const WorkerPattern& w : *workers) PrintText(w, options.max_functions);
  return 0;
}

}  // namespace

void RegisterShowCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<ShowOptions>();
  CLI::App* cmd = app.add_subcommand("show", "Print a pattern or metrics file for humans or as JSON");
  cmd->add_option("file", options->path, "A pattern file from `eroica summarize`, or an agent's *.eroica-metrics file")
      ->required();
  cmd->add_option("--format", options->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("-n,--functions", options->max_functions, "Functions to list per worker (text)");
  cmd->callback([options, exit_code] { *exit_code = RunShow(*options); });
}

}  // namespace eroica
