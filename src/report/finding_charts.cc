#include "report/finding_charts.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_set>

namespace eroica {
namespace {

const FunctionPattern* FindFunction(const WorkerPattern& w, const std::string& name) {
  for (const FunctionPattern& f : w.functions) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool AnyWorkerHas(const std::vector<WorkerPattern>& workers, const std::string& name) {
  if (name.empty()) return false;
  for (const WorkerPattern& w : workers) {
    if (FindFunction(w, name) != nullptr) return true;
  }
  return false;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + mid, values.end());
  return values[mid];
}

}  // namespace

std::optional<Category> ResourceOf(const Finding& finding, const std::vector<WorkerPattern>& workers) {
  if (std::optional<Category> c = InfoOf(finding.category).resource) return c;
  for (const WorkerPattern& w : workers) {
    if (const FunctionPattern* f = FindFunction(w, finding.function)) return f->category;
  }
  return std::nullopt;
}

StripPlot BetaDistribution(const Finding& finding, const std::vector<WorkerPattern>& workers) {
  StripPlot plot;
  std::unordered_set<int> suspects(finding.workers.begin(), finding.workers.end());
  bool local = finding.scope == FindingScope::kLocal;
  bool by_function = AnyWorkerHas(workers, finding.function);
  std::optional<Category> category = ResourceOf(finding, workers);
  if (!by_function && !category) return plot;
  plot.axis_label = by_function
                        ? "β of this function: share of the profiled window it owns the critical path"
                        : fmt::format("β of all {} work: share of the profiled window", CategoryName(*category));
  std::vector<double> peers;
  for (const WorkerPattern& w : workers) {
    double beta = 0;
    if (by_function) {
      const FunctionPattern* f = FindFunction(w, finding.function);
      beta = f != nullptr ? f->beta : 0;
    } else {
      beta = w.category_beta[static_cast<size_t>(*category)];
    }
    bool suspect = local && suspects.count(w.rank) > 0;
    plot.points.push_back({w.rank, beta, -1, suspect});
    if (!suspect) peers.push_back(beta);
  }
  plot.reference = Median(peers);
  plot.reference_label = local ? "peer median" : "median";
  return plot;
}

std::optional<StripPlot> UtilisationDistribution(const Finding& finding, const std::vector<WorkerPattern>& workers) {
  StripPlot plot;
  plot.axis_label = "μ: mean utilisation of the function's resource while it owns the critical path (±σ on suspects)";
  std::unordered_set<int> suspects(finding.workers.begin(), finding.workers.end());
  std::vector<double> peers;
  for (const WorkerPattern& w : workers) {
    const FunctionPattern* f = FindFunction(w, finding.function);
    if (f == nullptr || !f->mu) continue;
    bool suspect = finding.scope == FindingScope::kLocal && suspects.count(w.rank) > 0;
    plot.points.push_back({w.rank, *f->mu, suspect && f->sigma ? *f->sigma : -1, suspect});
    if (!suspect) peers.push_back(*f->mu);
  }
  if (plot.points.empty()) return std::nullopt;
  plot.reference = peers.empty() ? -1 : Median(peers);
  plot.reference_label = "peer median";
  return plot;
}

LineChart PersistenceChart(const Finding& finding, const std::vector<WorkerPattern>& workers) {
  LineChart chart;
  std::optional<Category> category = ResourceOf(finding, workers);
  if (!category) return chart;
  size_t c = static_cast<size_t>(*category);
  chart.x_label = "profiled iteration";
  chart.y_label = fmt::format("{} share of the iteration (%)", CategoryName(*category));
  const WorkerPattern* suspect = nullptr;
  if (finding.scope == FindingScope::kLocal && !finding.workers.empty()) {
    for (const WorkerPattern& w : workers) {
      if (w.rank == finding.workers.front()) suspect = &w;
    }
  }
  std::unordered_set<int> excluded(finding.workers.begin(), finding.workers.end());
  if (finding.scope != FindingScope::kLocal) excluded.clear();
  size_t iterations = suspect != nullptr ? suspect->iteration_category_beta.size() : 0;
  std::vector<std::vector<double>> peer_values;
  for (const WorkerPattern& w : workers) {
    if (excluded.count(w.rank) > 0 || (suspect != nullptr && w.group != suspect->group)) continue;
    if (w.iteration_category_beta.empty()) continue;
    if (iterations == 0) iterations = w.iteration_category_beta.size();
    iterations = std::min(iterations, w.iteration_category_beta.size());
    std::vector<double> row;
    for (const auto& shares : w.iteration_category_beta) row.push_back(shares[c] * 100.0);
    peer_values.push_back(std::move(row));
  }
  if (iterations < 2) return chart;
  auto x_of = [&](const WorkerPattern* w, size_t i) {
    return w != nullptr && i < w->step_ids.size() ? static_cast<double>(w->step_ids[i]) : static_cast<double>(i);
  };
  const WorkerPattern* reference = suspect != nullptr ? suspect : &workers.front();
  LineSeries median{finding.scope == FindingScope::kLocal ? "peers' median" : "median of all ranks", {}, "peer"};
  LineSeries high{finding.scope == FindingScope::kLocal ? "peers' maximum" : "maximum", {}, "peermax"};
  for (size_t i = 0; i < iterations && !peer_values.empty(); ++i) {
    std::vector<double> values;
    values.reserve(peer_values.size());
    for (const auto& row : peer_values) values.push_back(row[i]);
    median.points.push_back({x_of(reference, i), Median(values)});
    high.points.push_back({x_of(reference, i), *std::max_element(values.begin(), values.end())});
  }
  chart.series.push_back(std::move(high));
  chart.series.push_back(std::move(median));
  if (suspect != nullptr) {
    LineSeries s{fmt::format("rank {}", suspect->rank), {}, "suspect"};
    for (size_t i = 0; i < iterations; ++i)
      s.points.push_back({x_of(suspect, i), suspect->iteration_category_beta[i][c] * 100.0});
    chart.series.push_back(std::move(s));
  }
  return chart;
}

}  // namespace eroica
