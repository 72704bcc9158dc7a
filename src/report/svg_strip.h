// Distribution of one value (a function's β, or its μ) across all workers, with the suspects
// highlighted and labelled: a strip of dots for up to a few hundred workers, a histogram with
// the suspects marked above it beyond that.
#pragma once

#include <string>
#include <vector>

namespace eroica {

struct StripPoint {
  int rank = -1;
  double value = 0;
  double sigma = -1;  // drawn as ±σ whiskers when ≥ 0
  bool suspect = false;
};

struct StripPlot {
  std::string axis_label;  // "β (share of the profiled window)"
  std::vector<StripPoint> points;
  double reference = -1;  // e.g. the peers' median, drawn as a dashed line when ≥ 0
  std::string reference_label;
  size_t max_dots = 400;  // more points become a histogram
};

std::string RenderStripSvg(const StripPlot& plot, int width = 680);

}  // namespace eroica
