#include "base/robust_stats.h"

#include <algorithm>
#include <cmath>

namespace eroica {

double MedianInPlace(std::vector<double>& values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(mid), values.end());
  double upper = values[mid];
  if (values.size() % 2 == 1) return upper;
  double lower = *std::max_element(values.begin(), values.begin() + static_cast<long>(mid));
  return (lower + upper) / 2;
}

RobustCenter MedianAndMad(std::vector<double> values) {
  RobustCenter center;
  center.median = MedianInPlace(values);
  for (double& v : values) v = std::fabs(v - center.median);
  center.mad = MedianInPlace(values);
  return center;
}

double RobustZ(double x, const RobustCenter& center, double min_scale) {
  double scale = std::max(1.4826 * center.mad, min_scale);
  return scale > 0 ? (x - center.median) / scale : 0;
}

}  // namespace eroica
