#include "localize/iteration_evidence.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "base/robust_stats.h"

namespace eroica {

double IterationShare(const WorkerGroup& group, size_t k, size_t i, std::optional<Category> category) {
  const auto& betas = group.table->iteration_betas(group.members[k])[i];
  if (category) return betas[static_cast<size_t>(*category)];
  double own = 0;
  for (Category c : kOwnWork) own += betas[static_cast<size_t>(c)];
  return own;
}

WindowExcess::WindowExcess(const WorkerGroup& group, std::optional<Category> category, const Expectations& e) {
  size_t n = group.size();
  size_t iterations = SIZE_MAX;
  for (size_t k = 0; k < n; ++k) iterations = std::min<size_t>(iterations, group.row(k).iterations_count);
  iterations_ = (n == 0 || iterations == SIZE_MAX) ? 0 : iterations;
  mean_excess_.assign(n, 0.0);
  z_.assign(n, 0.0);
  if (iterations_ == 0 || n < 3) return;
  // Deviations from each iteration's median, and their sums per member and in all, so that each
  // member's noise is the spread of everyone else's: the peers' own spikes (a rank descheduled for
  // a while) are what a sum must rise above, and the suspect's excess does not inflate it.
  std::vector<double> sum(n, 0.0), squares(n, 0.0);
  double total = 0, total_squares = 0;
  std::vector<double> column(n);
  for (size_t i = 0; i < iterations_; ++i) {
    for (size_t k = 0; k < n; ++k) column[k] = IterationShare(group, k, i, category);
    std::vector<double> sorted = column;
    double median = MedianInPlace(sorted);
    for (size_t k = 0; k < n; ++k) {
      double d = column[k] - median;
      sum[k] += d, squares[k] += d * d;
      total += d, total_squares += d * d;
    }
  }
  double others_count = static_cast<double>((n - 1) * iterations_);
  for (size_t k = 0; k < n; ++k) {
    mean_excess_[k] = sum[k] / static_cast<double>(iterations_);
    double mean = (total - sum[k]) / others_count;
    double variance = std::max(0.0, (total_squares - squares[k]) / others_count - mean * mean);
    double spread = std::max(std::sqrt(variance), e.min_scale_beta);
    z_[k] = mean_excess_[k] / (spread / std::sqrt(static_cast<double>(iterations_)));
  }
}

}  // namespace eroica
