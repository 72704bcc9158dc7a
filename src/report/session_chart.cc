#include "report/session_chart.h"

#include <fmt/core.h>

namespace eroica {

LineChart IterationTimeChart(const SessionInfo& s) {
  LineChart chart;
  chart.x_label = "iteration";
  chart.y_label = "iteration time (ms)";
  if (s.iteration_times_s.empty()) return chart;
  std::string who = s.trigger_rank >= 0 ? fmt::format("rank {} (detector)", s.trigger_rank) : "detecting rank";
  LineSeries times{who, {}, "times"};
  for (size_t i = 0; i < s.iteration_times_s.size(); ++i) {
    times.points.push_back({static_cast<double>(s.iteration_times_first_id + static_cast<int64_t>(i)),
                            s.iteration_times_s[i] * 1e3});
  }
  double first = times.points.front().first;
  double last = times.points.back().first;
  if (s.best_mean_s > 0) {
    chart.series.push_back({"baseline (best mean)", {{first, s.best_mean_s * 1e3}, {last, s.best_mean_s * 1e3}}, "baseline"});
    if (s.threshold > 0) {
      double limit = s.best_mean_s * s.threshold * 1e3;
      chart.series.push_back({fmt::format("threshold ×{:.2f}", s.threshold), {{first, limit}, {last, limit}}, "threshold"});
    }
  }
  chart.series.push_back(std::move(times));
  if (s.detected_iteration >= 0) chart.markers.push_back({static_cast<double>(s.detected_iteration), "trigger"});
  if (s.stuck_iteration >= 0 && s.stuck_iteration != s.detected_iteration) {
    chart.markers.push_back({static_cast<double>(s.stuck_iteration), "stuck"});
  }
  if (s.target_iteration >= 0 && s.reason != "hang") {
    int n = s.capture_iterations > 0 ? s.capture_iterations : 1;
    chart.ranges.push_back({static_cast<double>(s.target_iteration), static_cast<double>(s.target_iteration + n),
                            "profiled"});
  }
  return chart;
}

}  // namespace eroica
