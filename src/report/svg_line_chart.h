// A small line chart in inline SVG: the iteration-time series around an online trigger, or a
// suspect's per-iteration share against its peers'. Vertical markers and shaded x ranges
// (the profiled window) annotate it.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace eroica {

struct LineSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), x ascending
  std::string css_class;                          // "suspect", "peer", "peerrange" ...
};

struct LineMarker {
  double x = 0;
  std::string label;
};

struct LineRange {
  double x_low = 0, x_high = 0;
  std::string label;
};

struct LineChart {
  std::string x_label;
  std::string y_label;
  std::vector<LineSeries> series;
  std::vector<LineMarker> markers;
  std::vector<LineRange> ranges;
  bool y_from_zero = true;
  bool x_integer = true;  // x values are iteration ids: no fractional ticks
  // When positive, the y axis ends here and higher points are drawn on its top edge (so a few
  // warm-up iterations do not flatten the rest); `clip_note` says so on the chart.
  double y_clip = 0;
  std::string clip_note;
};

std::string RenderLineChartSvg(const LineChart& chart, int width = 680, int height = 230);

}  // namespace eroica
