#include "agent/metrics_json.h"

#include <algorithm>

namespace eroica::agent {
namespace {

nlohmann::json SeriesToJson(const MetricsSeries& s) {
  nlohmann::json j = {
      {"name", s.info.name},        {"kind", s.info.kind == SeriesKind::kCounter ? "counter" : "gauge"},
      {"unit", s.info.unit},        {"pid", s.info.pid},
      {"tid", s.info.tid},          {"instance", s.info.instance},
      {"label", s.info.label},      {"capacity", s.info.capacity},
      {"samples", s.values.size()},
  };
  if (s.values.empty()) return j;
  auto [low, high] = std::minmax_element(s.values.begin(), s.values.end());
  double sum = 0;
  for (int64_t v : s.values) sum += static_cast<double>(v);
  j["first_unix_ns"] = s.ts_unix_ns.front();
  j["last_unix_ns"] = s.ts_unix_ns.back();
  j["min"] = *low;
  j["max"] = *high;
  j["mean"] = sum / static_cast<double>(s.values.size());
  int64_t span_ns = s.ts_unix_ns.back() - s.ts_unix_ns.front();
  if (s.info.kind == SeriesKind::kCounter && span_ns > 0) {
    // Units per second over the file; a counter reset makes this meaningless, so it is only
    // given when the counter never went down.
    bool monotone = std::is_sorted(s.values.begin(), s.values.end());
    if (monotone) {
      j["rate_per_s"] = static_cast<double>(s.values.back() - s.values.front()) * 1e9 / static_cast<double>(span_ns);
    }
  }
  return j;
}

}  // namespace

nlohmann::json MetricsFileToJson(const MetricsFile& file) {
  nlohmann::json processes = nlohmann::json::array();
  for (const MetricsProcess& p : file.processes) {
    processes.push_back({{"pid", p.pid}, {"rank", p.rank}, {"gpu_index", p.gpu_index}});
  }
  nlohmann::json series = nlohmann::json::array();
  for (const MetricsSeries& s : file.series) series.push_back(SeriesToJson(s));
  return {
      {"schema", "eroica.metrics-summary/v1"},
      {"version", file.version},
      {"host", file.host},
      {"created_unix_ns", file.created_unix_ns},
      {"window_start_unix_ns", file.window_start_unix_ns},
      {"window_end_unix_ns", file.window_end_unix_ns},
      {"num_cpus", file.num_cpus},
      {"sample_interval_ns", file.sample_interval_ns},
      {"processes", processes},
      {"series", series},
  };
}

}  // namespace eroica::agent
