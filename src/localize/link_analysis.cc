#include "localize/link_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "base/robust_stats.h"

namespace eroica {
namespace {

// The throughput a link reaches while its collective owns the critical path: μ + 2σ of its
// utilisation, a burst peak that does not depend on one sample.
struct LinkPeak {
  size_t member;
  double peak;
  double mu;
  double sigma;
  const FunctionEntry* function;
};

// The worker's most critical communication function with hardware samples.
const FunctionEntry* SampledCollective(const WorkerGroup& group, size_t k) {
  const FunctionEntry* best = nullptr;
  for (const FunctionEntry& f : group.functions(k)) {
    if (f.category == Category::kCommunication && f.has_mu() && !std::isnan(f.sigma) &&
        (best == nullptr || f.beta > best->beta)) {
      best = &f;
    }
  }
  return best;
}

}  // namespace

std::vector<Finding> FindDegradedLinks(const WorkerGroup& group, const Expectations& e) {
  size_t n = group.size();
  if (n < 3) return {};
  std::vector<LinkPeak> peaks;
  for (size_t k = 0; k < n; ++k) {
    const FunctionEntry* f = SampledCollective(group, k);
    if (f == nullptr) return {};  // every rank needs samples to be compared
    peaks.push_back({k, f->mu + 2 * f->sigma, f->mu, f->sigma, f});
  }
  auto lowest = std::min_element(peaks.begin(), peaks.end(),
                                 [](const LinkPeak& a, const LinkPeak& b) { return a.peak < b.peak; });
  std::vector<double> others, others_mu;
  for (const LinkPeak& p : peaks) {
    if (p.member != lowest->member) {
      others.push_back(p.peak);
      others_mu.push_back(p.mu);
    }
  }
  double peer_peak = MedianInPlace(others);
  double peer_mu = MedianInPlace(others_mu);
  double deficit = peer_peak > 0 ? 1 - lowest->peak / peer_peak : 0;
  const WorkerRow& w = group.row(lowest->member);
  std::vector<double> comm = CategoryBetas(group, Category::kCommunication);
  double comm_beta = MedianInPlace(comm);
  double impact = comm_beta * MedianIterationS(group) * deficit;
  if (deficit < e.link_peak_deficit || lowest->mu > peer_mu || impact < e.min_excess_beta * MedianIterationS(group)) {
    return {};
  }
  Finding f;
  f.scope = FindingScope::kLocal;
  f.category = FindingCategory::kCommunication;
  f.workers = {w.rank};
  f.function = std::string(group.table->name(lowest->function->name));
  f.beta = lowest->function->beta;
  f.peer_beta = comm_beta;
  f.differential_distance = deficit;
  f.impact_s_per_iter = impact;
  f.evidence = fmt::format(
      "rank {}'s link peaks at {:.3f} of capacity during {} (μ {:.3f}, σ {:.4f}) vs {:.3f} on its "
      "peers (median μ {:.3f}): {:.0f}% lower; every rank's collectives are equally slow (exposed "
      "communication β {:.2f}) because they wait for this link",
      w.rank, lowest->peak, f.function, lowest->mu, lowest->sigma, peer_peak, peer_mu, deficit * 100, comm_beta);
  f.action = AdviceFor(FindingCategory::kCommunication, FindingScope::kLocal, w.rank);
  return {f};
}

}  // namespace eroica
