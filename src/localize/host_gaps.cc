#include "localize/host_gaps.h"

#include <algorithm>

#include "localize/groups.h"

namespace eroica {

double UsualCallShare(const FunctionEntry& f, int iterations) {
  // A median of one or two calls says nothing about which of them is the usual one.
  constexpr double kMinCalls = 3;
  if (f.category != Category::kHost || f.median_duration_us <= 0 || f.mean_duration_us <= 0) return f.beta;
  if (f.calls_per_iter * static_cast<double>(std::max(iterations, 1)) < kMinCalls) return f.beta;
  // Only a point reached once a step: one reached k times a step by code that runs once a step (a
  // loop or gc.collect() after the first of 3 micro-batches) has one long call in k, and its
  // median is the short ones' though every step pays.
  if (f.calls_per_iter > 1.0f + 1e-3f) return f.beta;
  return f.beta * std::min(1.0, static_cast<double>(f.median_duration_us) / f.mean_duration_us);
}

std::vector<double> HostGapShares(const WorkerGroup& group) {
  double median_iteration_s = std::max(MedianIterationS(group), 1e-12);
  std::vector<double> shares(group.size(), 0.0);
  for (size_t k = 0; k < group.size(); ++k) {
    const WorkerRow& w = group.row(k);
    double gaps = 0;
    for (const FunctionEntry& f : group.functions(k)) {
      if (f.category == Category::kHost) gaps += f.beta - UsualCallShare(f, w.iterations);
    }
    shares[k] = gaps * w.iteration_s / median_iteration_s;
  }
  return shares;
}

}  // namespace eroica
