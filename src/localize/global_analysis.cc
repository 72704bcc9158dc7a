#include "localize/global_analysis.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "localize/advice.h"
#include "localize/robust_stats.h"

namespace eroica {
namespace {

struct Over {
  std::vector<int> ranks;
  std::vector<double> betas;
  std::vector<double> distances;
};

// Exposed communication that even the least-waiting rank pays is the collectives' own cost;
// what the others pay beyond it is waiting for that rank. A low quantile, robust to one outlier.
double UnavoidableCommunication(const WorkerGroup& group) {
  std::vector<double> betas = CategoryBetas(group, Category::kCommunication);
  std::sort(betas.begin(), betas.end());
  size_t index = betas.size() >= 10 ? betas.size() / 10 : 0;
  return betas.empty() ? 0 : betas[index];
}

std::vector<int> Listed(const std::vector<int>& ranks) {
  std::vector<int> out(ranks.begin(), ranks.begin() + std::min(ranks.size(), kMaxListedWorkers));
  std::sort(out.begin(), out.end());
  return out;
}

// The function of a category with the largest median β across the group.
std::pair<std::string, double> TopFunctionOf(const WorkerGroup& group, Category category) {
  std::map<std::string, std::vector<double>> betas;
  for (const WorkerPattern* w : group.workers) {
    for (const FunctionPattern& f : w->functions) {
      if (f.category == category) betas[f.name].push_back(f.beta);
    }
  }
  std::pair<std::string, double> best{"", -1};
  for (auto& [name, values] : betas) {
    values.resize(group.workers.size(), 0.0);
    double median = MedianInPlace(values);
    if (median > best.second) best = {name, median};
  }
  return best;
}

Finding MakeGlobal(const WorkerGroup& group, Category category, const std::string& function,
                   double beta, double bound, const std::vector<int>& ranks, double z_unused) {
  Finding f;
  f.scope = "global";
  f.category = std::string(CategoryName(category));
  f.workers = Listed(ranks);
  f.function = function;
  f.beta = beta;
  f.peer_beta = bound;
  f.expectation_distance = beta - bound;
  f.differential_distance = z_unused;
  f.impact_s_per_iter = (beta - bound) * MedianIterationS(group);
  f.action = Advice(f.category, f.scope, -1);
  return f;
}

std::vector<Finding> CategoryFindings(const WorkerGroup& group, const Expectations& e, bool has_device) {
  std::vector<Finding> out;
  size_t n = group.workers.size();
  for (int c = 0; c < kCategoryCount; ++c) {
    auto category = static_cast<Category>(c);
    std::optional<double> high = e.BetaHigh(Box::Target::kCategory, category, std::nullopt, has_device);
    if (!high) continue;
    std::vector<double> betas = CategoryBetas(group, category);
    std::vector<int> over;
    for (size_t i = 0; i < n; ++i) {
      if (e.CategoryDistance(category, betas[i], has_device) > 0) over.push_back(group.workers[i]->rank);
    }
    if (static_cast<double>(over.size()) <= e.global_fraction * static_cast<double>(n)) continue;
    double level = category == Category::kCommunication ? UnavoidableCommunication(group)
                                                        : MedianInPlace(betas);
    if (level - *high < e.min_excess_beta) continue;
    auto [function, function_beta] = TopFunctionOf(group, category);
    Finding f = MakeGlobal(group, category, function, level, *high, over, 0);
    f.evidence = fmt::format("{} of {} workers spend β {:.2f} of each iteration in {} (expected at "
                             "most {:.2f}); top function {} (median β {:.3f})",
                             over.size(), n, level, CategoryName(category), *high, function, function_beta);
    if (category == Category::kCommunication) {
      f.evidence += "; even the least-waiting rank pays it, so no straggler explains it";
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> FunctionFindings(const WorkerGroup& group, const Expectations& e, bool has_device) {
  std::map<std::pair<Category, std::string>, Over> over;
  for (const WorkerPattern* w : group.workers) {
    for (const FunctionPattern& f : w->functions) {
      if (f.beta < e.min_beta || f.name.starts_with("(other")) continue;
      double d = e.Distance(f, has_device);
      if (d <= 0) continue;
      Over& o = over[{f.category, f.name}];
      o.ranks.push_back(w->rank);
      o.betas.push_back(f.beta);
      o.distances.push_back(d);
    }
  }
  // One finding per category: its worst function; the rest are named in the evidence.
  std::map<Category, Finding> best;
  size_t n = group.workers.size();
  for (auto& [key, o] : over) {
    if (static_cast<double>(o.ranks.size()) <= e.global_fraction * static_cast<double>(n)) continue;
    std::vector<double> betas = o.betas;
    betas.resize(n, 0.0);
    double median_beta = MedianInPlace(betas);
    double median_distance = MedianInPlace(o.distances);
    if (median_distance < e.min_excess_beta) continue;
    Finding f = MakeGlobal(group, key.first, key.second, median_beta, median_beta - median_distance,
                           o.ranks, 0);
    f.evidence = fmt::format("{} of {} workers spend β {:.3f} in {} (expected at most {:.3f})",
                             o.ranks.size(), n, median_beta, key.second, median_beta - median_distance);
    auto it = best.find(key.first);
    if (it == best.end() || f.impact_s_per_iter > it->second.impact_s_per_iter) best[key.first] = f;
  }
  std::vector<Finding> out;
  for (auto& [category, f] : best) out.push_back(std::move(f));
  return out;
}

}  // namespace

std::vector<Finding> FindGlobalProblems(const WorkerGroup& group, const Expectations& e) {
  if (group.workers.empty()) return {};
  bool has_device = group.workers[0]->has_device;
  std::vector<Finding> out = CategoryFindings(group, e, has_device);
  for (Finding& f : FunctionFindings(group, e, has_device)) {
    bool covered = std::any_of(out.begin(), out.end(), [&](const Finding& g) { return g.category == f.category; });
    if (!covered) out.push_back(std::move(f));
  }
  return out;
}

}  // namespace eroica
