#include "report/run_figures.h"

#include "base/robust_stats.h"

namespace eroica {

double MedianIterationSeconds(const std::vector<WorkerPattern>& workers) {
  std::vector<double> values;
  for (const WorkerPattern& w : workers) {
    if (w.iteration_s > 0) values.push_back(w.iteration_s);
  }
  return MedianInPlace(values);
}

}  // namespace eroica
