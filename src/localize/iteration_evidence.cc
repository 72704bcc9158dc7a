#include "localize/iteration_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "base/robust_stats.h"

namespace eroica {

double IterationShare(const WorkerGroup& group, size_t k, size_t i, std::optional<Category> category) {
  const auto& betas = group.table->iteration_betas(group.members[k])[i];
  if (category) return betas[static_cast<size_t>(*category)];
  double own = 0;
  for (Category c : kOwnWork) own += betas[static_cast<size_t>(c)];
  return own;
}

namespace {

// Each member's deviations from the iteration's median, summed per member and over everyone,
// and each member's smallest.
struct Deviations {
  std::vector<double> sum, squares, smallest;
  double total = 0, total_squares = 0;

  Deviations(const WorkerGroup& group, std::optional<Category> category, size_t iterations) {
    size_t n = group.size();
    sum.assign(n, 0.0);
    squares.assign(n, 0.0);
    smallest.assign(n, std::numeric_limits<double>::infinity());
    std::vector<double> column(n), sorted(n);
    for (size_t i = 0; i < iterations; ++i) {
      for (size_t k = 0; k < n; ++k) column[k] = IterationShare(group, k, i, category);
      sorted = column;
      double median = MedianInPlace(sorted);
      for (size_t k = 0; k < n; ++k) {
        double d = column[k] - median;
        sum[k] += d, squares[k] += d * d;
        smallest[k] = std::min(smallest[k], d);
        total += d, total_squares += d * d;
      }
    }
  }

  // The spread of every member's deviations but k's: the suspect's excess does not inflate it.
  double OthersSpread(size_t k, double others_count) const {
    double mean = (total - sum[k]) / others_count;
    return std::sqrt(std::max(0.0, (total_squares - squares[k]) / others_count - mean * mean));
  }
};

}  // namespace

WindowExcess::WindowExcess(const WorkerGroup& group, std::optional<Category> category, const Expectations& e,
                           const WindowExcess* own_work) {
  size_t n = group.size();
  size_t iterations = SIZE_MAX;
  for (size_t k = 0; k < n; ++k) iterations = std::min<size_t>(iterations, group.row(k).iterations_count);
  iterations_ = (n == 0 || iterations == SIZE_MAX) ? 0 : iterations;
  mean_excess_.assign(n, 0.0);
  z_.assign(n, 0.0);
  category_z_.assign(n, 0.0);
  smallest_excess_.assign(n, 0.0);
  spread_.assign(n, 0.0);
  if (iterations_ == 0 || n < 3) return;
  // Deviations from each iteration's median, so that each member's noise is the spread of
  // everyone else's: the peers' own spikes (a rank descheduled for a while) are what a sum must
  // rise above. A descheduled thread stretches whatever it was doing, an op, Python, the wake-up
  // after a collective, so the scheduler's noise moves between categories from one iteration to
  // the next: one category's sum must also rise above the spread of all own work. Healthy 4-rank
  // runs on 2 cores had a rank's host time summed over the window 5-13 of the host spread above
  // its peers (its thread woke late after the all-reduce) but at most 3 of the own-work spread;
  // real local faults of the tuning split stood 8-37 above it, but for a synchronous checkpoint
  // at 4.7, the rank the others waited for at every collective (CategoryZ: local_analysis.cc).
  Deviations mine(group, category, iterations_);
  bool with_own = own_work != nullptr && own_work->iterations_ == iterations_;
  double others_count = static_cast<double>((n - 1) * iterations_);
  double root = std::sqrt(static_cast<double>(iterations_));
  for (size_t k = 0; k < n; ++k) {
    mean_excess_[k] = mine.sum[k] / static_cast<double>(iterations_);
    smallest_excess_[k] = mine.smallest[k];
    spread_[k] = mine.OthersSpread(k, others_count);
    double spread = std::max(spread_[k], e.min_scale_beta);
    category_z_[k] = mean_excess_[k] / (spread / root);
    if (with_own) spread = std::max(spread, own_work->spread_[k]);
    z_[k] = mean_excess_[k] / (spread / root);
  }
}

}  // namespace eroica
