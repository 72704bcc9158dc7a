#include "report/session_chart.h"

#include <fmt/core.h>

#include <algorithm>
#include <vector>

#include "base/robust_stats.h"

namespace eroica {
namespace {

// The series ends at the trigger, so what matters is its level and its later part; the first
// (warm-up) iterations can be many times slower and would squash everything else into a flat
// line. The axis ends at 1.5 × the highest of the series' median, the detector's threshold and
// its current mean, or at the largest time in the later half of the series when that is higher;
// the chart says how many earlier iterations it clips.
void ClipWarmUp(const SessionInfo& s, LineChart* chart) {
  const std::vector<double>& t = s.iteration_times_s;
  std::vector<double> copy = t;
  double level = std::max({MedianInPlace(copy), s.best_mean_s * s.threshold, s.current_mean_s});
  double later = *std::max_element(t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
  double ceiling_s = std::max(1.5 * level, later);
  int clipped = 0;
  double highest = 0;
  int64_t highest_id = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] <= ceiling_s) continue;
    ++clipped;
    if (t[i] > highest) highest = t[i], highest_id = s.iteration_times_first_id + static_cast<int64_t>(i);
  }
  if (clipped == 0) return;
  chart->y_clip = ceiling_s * 1e3;
  chart->clip_note = fmt::format("{} early iteration{} above {:.0f} ms clipped (warm-up; the slowest {:.0f} ms at {})",
                                 clipped, clipped == 1 ? "" : "s", ceiling_s * 1e3, highest * 1e3, highest_id);
}

}  // namespace

LineChart IterationTimeChart(const SessionInfo& s) {
  LineChart chart;
  chart.x_label = "iteration";
  chart.y_label = "iteration time (ms)";
  if (s.iteration_times_s.empty()) return chart;
  std::string who = s.trigger_rank >= 0 ? fmt::format("rank {} (detector)", s.trigger_rank) : "detecting rank";
  LineSeries times{who, {}, "times"};
  for (size_t i = 0; i < s.iteration_times_s.size(); ++i) {
    times.points.push_back(
        {static_cast<double>(s.iteration_times_first_id + static_cast<int64_t>(i)), s.iteration_times_s[i] * 1e3});
  }
  double first = times.points.front().first;
  double last = times.points.back().first;
  if (s.best_mean_s > 0) {
    chart.series.push_back(
        {"baseline (best mean)", {{first, s.best_mean_s * 1e3}, {last, s.best_mean_s * 1e3}}, "baseline"});
    if (s.threshold > 0) {
      double limit = s.best_mean_s * s.threshold * 1e3;
      chart.series.push_back(
          {fmt::format("threshold ×{:.2f}", s.threshold), {{first, limit}, {last, limit}}, "threshold"});
    }
  }
  chart.series.push_back(std::move(times));
  ClipWarmUp(s, &chart);
  if (s.detected_iteration >= 0) chart.markers.push_back({static_cast<double>(s.detected_iteration), "trigger"});
  if (s.stuck_iteration >= 0 && s.stuck_iteration != s.detected_iteration) {
    chart.markers.push_back({static_cast<double>(s.stuck_iteration), "stuck"});
  }
  if (s.target_iteration >= 0 && s.reason != "hang") {
    int n = s.capture_iterations > 0 ? s.capture_iterations : 1;
    chart.ranges.push_back(
        {static_cast<double>(s.target_iteration), static_cast<double>(s.target_iteration + n), "profiled"});
  }
  return chart;
}

}  // namespace eroica
