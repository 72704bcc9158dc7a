#include "summary/utilization_stats.h"

#include <algorithm>
#include <cmath>

namespace eroica {
namespace {

// A function needs samples over at least this share of the time it owns for μ, σ to mean much.
constexpr double kMinCoveredShare = 0.5;

bool Has(const std::vector<ResourceSamples>& samples, ResourceKind kind) {
  return std::any_of(samples.begin(), samples.end(),
                     [&](const ResourceSamples& s) { return s.kind == kind && !s.ts_ns.empty(); });
}

struct Moments {
  double weight = 0, sum = 0, sum_squares = 0;
};

// Time-weighted moments of a piecewise-constant series over each span's interval.
void Accumulate(const CriticalPath& path, const ResourceSamples& series, const std::vector<bool>& wanted,
                std::vector<Moments>* moments) {
  size_t i = 1;
  for (const Span& span : path) {
    if (!wanted[span.function]) continue;
    while (i < series.ts_ns.size() && series.ts_ns[i] <= span.start_ns) ++i;
    for (size_t j = i; j < series.ts_ns.size() && series.ts_ns[j - 1] < span.end_ns; ++j) {
      int64_t from = std::max(span.start_ns, series.ts_ns[j - 1]);
      int64_t to = std::min(span.end_ns, series.ts_ns[j]);
      if (to <= from) continue;
      double w = static_cast<double>(to - from);
      double v = series.utilization[j];
      Moments& m = (*moments)[span.function];
      m.weight += w;
      m.sum += v * w;
      m.sum_squares += v * v * w;
    }
  }
}

}  // namespace

std::optional<ResourceKind> ResourceFor(Category category, bool has_device,
                                        const std::vector<ResourceSamples>& available) {
  std::vector<ResourceKind> choices;
  switch (category) {
    case Category::kCompute:
      choices = has_device ? std::vector{ResourceKind::kGpuSm} : std::vector{ResourceKind::kCpu};
      break;
    case Category::kCommunication:
      choices = {ResourceKind::kNetwork, ResourceKind::kNvlink};
      break;
    case Category::kMemory:
      choices = {ResourceKind::kPcie};
      break;
    case Category::kDataloader:
    case Category::kHost:
      choices = {ResourceKind::kCpu};
      break;
  }
  for (ResourceKind kind : choices) {
    if (Has(available, kind)) return kind;
  }
  return std::nullopt;
}

void AddUtilization(const CriticalPath& path, bool has_device, const std::vector<ResourceSamples>& samples,
                    FunctionTable* table) {
  std::vector<FunctionStats>& functions = table->all();
  for (const ResourceSamples& series : samples) {
    if (series.ts_ns.size() < 2 || series.ts_ns.size() != series.utilization.size()) continue;
    std::vector<bool> wanted(functions.size(), false);
    for (size_t f = 0; f < functions.size(); ++f) {
      wanted[f] = ResourceFor(functions[f].category, has_device, samples) == series.kind;
    }
    std::vector<Moments> moments(functions.size());
    Accumulate(path, series, wanted, &moments);
    for (size_t f = 0; f < functions.size(); ++f) {
      const Moments& m = moments[f];
      if (!wanted[f] || m.weight < kMinCoveredShare * static_cast<double>(functions[f].owned_ns) || m.weight <= 0)
        continue;
      double mu = m.sum / m.weight;
      functions[f].mu = mu;
      functions[f].sigma = std::sqrt(std::max(0.0, m.sum_squares / m.weight - mu * mu));
    }
  }
}

}  // namespace eroica
