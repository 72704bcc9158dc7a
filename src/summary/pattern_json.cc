#include "summary/pattern_json.h"

#include <cmath>

namespace eroica {
namespace {

double Round(double value, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

}  // namespace

nlohmann::json PatternToJson(const WorkerPattern& w) {
  nlohmann::json functions = nlohmann::json::array();
  for (const FunctionPattern& f : w.functions) {
    nlohmann::json j = {
        {"name", f.name},
        {"category", CategoryName(f.category)},
        {"beta", Round(f.beta, 6)},
        {"mu", f.mu ? nlohmann::json(Round(*f.mu, 4)) : nlohmann::json(nullptr)},
        {"sigma", f.sigma ? nlohmann::json(Round(*f.sigma, 4)) : nlohmann::json(nullptr)},
        {"calls_per_iter", Round(f.calls_per_iter, 3)},
        {"mean_duration_us", Round(f.mean_duration_us, 3)},
        {"median_duration_us", Round(f.median_duration_us, 3)},
        {"low_quartile_duration_us", Round(f.low_quartile_duration_us, 3)},
    };
    if (f.host_kind != HostKind::kNone) j["host_kind"] = HostKindName(f.host_kind);
    if (f.bytes_per_iter > 0) j["bytes_per_iter"] = f.bytes_per_iter;
    if (f.shapes_hash != 0) j["shapes_hash"] = f.shapes_hash;
    for (const HotFrame& frame : f.hot_frames) {
      j["hot_frames"].push_back({{"location", frame.location}, {"share", Round(frame.share, 3)}});
    }
    functions.push_back(std::move(j));
  }
  nlohmann::json collectives = nlohmann::json::array();
  for (const CollectiveCall& c : w.collectives) {
    nlohmann::json call = {{"name", c.name}, {"duration_us", Round(c.duration_us, 3)}};
    if (c.iteration >= 0) call["iteration"] = c.iteration;
    collectives.push_back(std::move(call));
  }
  nlohmann::json category_beta = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) {
    category_beta[std::string(CategoryName(static_cast<Category>(c)))] = Round(w.category_beta[c], 6);
  }
  nlohmann::json doc = {
      {"schema", kPatternJsonSchema},
      {"rank", w.rank},
      {"world_size", w.world_size},
      {"host", w.host},
      {"source", w.source},
      {"has_device", w.has_device},
      {"device_name", w.device_name},
      {"group", w.group},
      {"step_ids", w.step_ids},
      {"iterations", w.iterations()},
      {"window_s", Round(static_cast<double>(w.window_ns) / 1e9, 9)},
      {"iteration_s", Round(w.iteration_s, 9)},
      {"category_beta", category_beta},
      {"iteration_category_beta", w.iteration_category_beta},
      {"dataloader_ops_per_iter", Round(w.dataloader_ops_per_iter, 3)},
      {"compute_calls_per_iter", Round(w.compute_calls_per_iter, 3)},
      {"functions", functions},
      {"collectives", collectives},
      {"warnings", w.warnings},
  };
  if (w.cpu) {
    doc["cpu"] = {{"cpus", Round(w.cpu->cpus, 3)},
                  {"host_busy", Round(w.cpu->host_busy, 4)},
                  {"process_cpu", Round(w.cpu->process_cpu, 4)},
                  {"run_delay", Round(w.cpu->run_delay, 4)},
                  {"loader_cpu", Round(w.cpu->loader_cpu, 4)},
                  {"loader_run_delay", Round(w.cpu->loader_run_delay, 4)}};
    if (w.cpu->throttled >= 0) doc["cpu"]["throttled"] = Round(w.cpu->throttled, 4);
    if (w.cpu->main_cpu >= 0) doc["cpu"]["main_cpu"] = Round(w.cpu->main_cpu, 4);
    if (w.cpu->main_run_delay >= 0) doc["cpu"]["main_run_delay"] = Round(w.cpu->main_run_delay, 4);
    if (w.cpu->loader_asleep >= 0) doc["cpu"]["loader_asleep"] = Round(w.cpu->loader_asleep, 4);
    if (w.cpu->loader_making >= 0) doc["cpu"]["loader_making"] = Round(w.cpu->loader_making, 4);
  }
  for (const HotFrame& frame : w.loader_worker_frames) {
    doc["loader_worker_frames"].push_back({{"location", frame.location}, {"share", Round(frame.share, 3)}});
  }
  for (const HotFrame& frame : w.other_thread_frames) {
    doc["other_thread_frames"].push_back({{"location", frame.location}, {"share", Round(frame.share, 3)}});
  }
  for (const CodeFrame& line : w.code_lines) {
    doc["code_lines"].push_back({{"location", line.location}, {"share", Round(line.share, 3)}, {"depth", line.depth}});
  }
  if (w.code_line_periods > 0) doc["code_line_periods"] = Round(w.code_line_periods, 1);
  return doc;
}

}  // namespace eroica
