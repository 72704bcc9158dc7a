// Median and MAD in O(n) (nth_element): what makes the differential distance stable from a
// handful of workers to a million without comparing every pair.
#pragma once

#include <vector>

namespace eroica {

// Median of the values (averaging the middle two); 0 for an empty input. Reorders `values`.
double MedianInPlace(std::vector<double>& values);

// A median of n values varies √(π/2) ≈ 1.2533 times as much as their mean: its standard error
// is kMedianStandardError · σ / √n (large n, normal data).
inline constexpr double kMedianStandardError = 1.2533;

struct RobustCenter {
  double median = 0;
  double mad = 0;  // median absolute deviation, unscaled
};

RobustCenter MedianAndMad(std::vector<double> values);

// For each value, the median of all the others, from one sort: leaving out the value at sorted
// position p shifts the order statistics above p down by one. O(n log n), not O(n^2), for groups
// of up to a million workers. 0 for each value when there is no other.
std::vector<double> MedianOfOthers(const std::vector<double>& values);

// |x - median| in units of the robust spread (1.4826·MAD estimates σ for normal data), with
// the spread floored at `min_scale` so near-identical peers do not turn noise into outliers.
double RobustZ(double x, const RobustCenter& center, double min_scale);

}  // namespace eroica
