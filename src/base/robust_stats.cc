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

std::vector<double> MedianOfOthers(const std::vector<double>& values) {
  size_t n = values.size();
  std::vector<double> out(n, 0.0);
  if (n < 2) return out;
  std::vector<size_t> order(n), position(n);
  for (size_t k = 0; k < n; ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  for (size_t r = 0; r < n; ++r) position[order[r]] = r;
  size_t m = n - 1;  // the others' count
  for (size_t k = 0; k < n; ++k) {
    size_t p = position[k];
    auto other = [&](size_t r) { return values[order[r < p ? r : r + 1]]; };
    out[k] = m % 2 == 1 ? other(m / 2) : (other(m / 2 - 1) + other(m / 2)) / 2;
  }
  return out;
}

}  // namespace eroica
